#!/usr/bin/env bash
# The whole check, as CI runs it: services up, formatting, lints, every test against the real
# PostgreSQL and Redis. Each test makes its own database (relations_test_*), dropped afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/services.sh

export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"

drop_test_databases() {
  psql "$TEST_DATABASE_URL" -Atqc \
    "select datname from pg_database where datname like 'relations_test_%'" 2>/dev/null |
    while read -r db; do psql "$TEST_DATABASE_URL" -qc "drop database if exists \"$db\" with (force)" >/dev/null 2>&1 || true; done
}
drop_test_databases
trap drop_test_databases EXIT

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
log=$(mktemp)
cargo test --workspace --locked "$@" 2>&1 | tee "$log"
# One closing line for the whole run (cargo prints one per test binary, the last often empty).
awk '/^test result:/ { p += $4; f += $6 } END { printf "all tests: %d passed, %d failed\n", p, f }' "$log"
rm -f "$log"
