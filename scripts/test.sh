#!/usr/bin/env bash
# The whole check, as CI runs it: services up, formatting, lints, every test against the real
# PostgreSQL, Redis and a Kafka-protocol broker (nisshi; each Kafka test starts its own on a
# free port). Each test makes its own schema in the database relations_test, dropped afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/services.sh
scripts/kafka.sh
scripts/ops.sh
# The failover test (api/tests/api/failover.rs) starts its own cluster with scripts/ha.sh.
scripts/ha.sh install
# The analytics tests (api/tests/api/analytics.rs) run docs/analytics.md's queries in DuckDB.
scripts/duckdb.sh
export PATH="$HOME/.cargo/bin:$PATH"

export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"

# The tests share one database, relations_test, with a schema per test.
drop_test_databases() {
  psql "$TEST_DATABASE_URL" -qc "drop database if exists relations_test with (force)" >/dev/null 2>&1 || true
}
drop_test_databases
trap drop_test_databases EXIT

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The layout from outside (issue 23): import circles, long functions, the log's SQL, HTTP in
# the store, one relation fold, one log tail.
scripts/checks.sh
# Every dependency audited, offline (issue 45): advisories, licences, sources (deny.toml).
scripts/audit.sh
# The Kafka tests' background processes log here (one file each); a failed run's story.
rm -rf target/kafka-logs
log=$(mktemp)
# The fault tests assert latencies (issue 30: /metrics from memory with PostgreSQL stopped;
# commands with Redis killed skip it at once): they run by themselves after the suite, not
# beside another test's server on the same two cores (beside the suite, medians of 5 ms
# became 50-70 ms and crossed their bounds in two of this session's four full runs).
if [ $# -eq 0 ]; then
  cargo test --workspace --locked -- --skip faults:: 2>&1 | tee "$log"
  cargo test -p relations-api --test api --locked -- faults:: 2>&1 | tee -a "$log"
else
  cargo test --workspace --locked "$@" 2>&1 | tee "$log"
fi
# One closing line for the whole run (cargo prints one per test binary, the last often empty).
awk '/^test result:/ { p += $4; f += $6 } END { printf "all tests: %d passed, %d failed\n", p, f }' "$log"
rm -f "$log"
# The served OpenAPI document against schemathesis (every operation, every check, fixed
# seed): the debug binary the tests just built.
scripts/schemathesis.sh
