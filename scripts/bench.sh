#!/usr/bin/env bash
# Reproduces BENCHMARKS.md: every scenario beside its baseline, measured in one run on this
# machine, printed as one Markdown table.
#   scripts/bench.sh                   # full scale (graph of 50k users, rebuild of ~1M events)
#   scripts/bench.sh --quick           # every scenario at small scale, in under three minutes
#   scripts/bench.sh --profile FILE    # also a system-wide perf profile of the 64-client follows
#   scripts/bench.sh --users 1000000   # every scenario in one world of 1M users (about 80 minutes)
#   scripts/bench.sh --only n          # one scenario (letters a to s; (n) erases a big account,
#                                      # (o) replays the log to Parquet and to JSON lines,
#                                      # (p) folds notifications beside the feed, (r) reposts in feeds,
#                                      # (s) an instance ready after start, from a snapshot)
# Needs PostgreSQL and Redis (started if missing), builds the release binaries, and installs the
# Stream-Framework baseline (stream-framework 1.4, redis<3) into target/bench/sf-venv. (k), the
# failover window, runs its own cluster with scripts/ha.sh (root and apt; skipped when it cannot).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/services.sh
scripts/kafka.sh build-deps
venv=target/bench/sf-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import stream_framework' 2>/dev/null; then
  mkdir -p target/bench
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "stream-framework==1.4.0" "redis<3"
fi
cargo build --release --locked --bin relations --bin relations-bench
export BENCH_STREAM_FRAMEWORK_PYTHON="$venv/bin/python"
export RELATIONS_BIN=target/release/relations
# (j) holds 10,000 streams open: a descriptor each, on both ends.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true
exec target/release/relations-bench "$@"
