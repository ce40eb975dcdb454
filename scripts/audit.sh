#!/usr/bin/env bash
# Every dependency audited, offline (issue 45): `cargo deny --offline check` against deny.toml,
# with the RustSec advisory database from ../shared/advisory-db (a plain snapshot, no .git).
# cargo-deny reads a database offline only as a git repository named after its source URL's
# hash under `db-path` (it asks git for HEAD's date), so the snapshot is copied there and
# committed once. cargo-deny itself is installed if missing (cached in ~/.cargo/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

# The snapshot beside the project (../shared), or this workplace's copy when the project is
# cloned elsewhere (CI's clean clone), or where ADVISORY_DB_SNAPSHOT says.
snapshot="${ADVISORY_DB_SNAPSHOT:-}"
if [ -z "$snapshot" ]; then
  for candidate in ../shared/advisory-db /work/shared/advisory-db; do
    if [ -d "$candidate/crates" ]; then snapshot="$candidate"; break; fi
  done
fi
db="target/advisory-db/advisory-db-3157b0e258782691"

if ! cargo deny --version 2>/dev/null | grep -q '^cargo-deny 0\.20'; then
  echo "[audit] installing cargo-deny 0.20 (a few minutes, once)"
  cargo install cargo-deny --version '^0.20' --locked --quiet
fi

if [ -z "$snapshot" ] || [ ! -d "$snapshot/crates" ]; then
  echo "[audit] no RustSec advisory snapshot found (../shared/advisory-db, /work/shared/advisory-db); set ADVISORY_DB_SNAPSHOT" >&2
  exit 1
fi
stamp="$(sha256sum "$snapshot/SNAPSHOT.txt" | cut -c1-16)"
if [ ! -f "$db/.snapshot-$stamp" ]; then
  rm -rf "$db"
  mkdir -p "$db"
  cp -r "$snapshot"/. "$db"/
  git -C "$db" init -q
  git -C "$db" -c user.name=audit -c user.email=audit@localhost add -A
  git -C "$db" -c user.name=audit -c user.email=audit@localhost commit -qm "snapshot $stamp"
  touch "$db/.snapshot-$stamp"
fi
cargo deny --offline check
