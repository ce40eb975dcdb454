#!/usr/bin/env bash
# Rebuilds a projector's read model from the log while the service keeps serving, then swaps
# it in:  scripts/rebuild.sh following        (DATABASE_URL as for the service)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 PROJECTOR" >&2; exit 2; }
export DATABASE_URL="${DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/relations_dev}"
export RELATIONS_MASTER_KEY="${RELATIONS_MASTER_KEY:-646576206f6e6c79206d6173746572206b65792c206e6576657220696e207072}"  # scripts/dev.sh's
cargo run --quiet --release --bin relations -- rebuild "$1"
cargo run --quiet --release --bin relations -- verify
