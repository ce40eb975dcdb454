#!/usr/bin/env bash
# The event log as JSON lines on stdout, for analysts; every `relations replay` filter passes
# through:  scripts/replay.sh --type Blocked --since 2026-11-01T00:00:00Z > blocks.jsonl
# Or as Parquet, appended to on each run (docs/analytics.md):
#           scripts/replay.sh --format parquet --out analytics
set -euo pipefail
cd "$(dirname "$0")/.."
export DATABASE_URL="${DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/relations_dev}"
export RELATIONS_MASTER_KEY="${RELATIONS_MASTER_KEY:-646576206f6e6c79206d6173746572206b65792c206e6576657220696e207072}"  # scripts/dev.sh's
exec cargo run --quiet --release --bin relations -- replay "$@"
