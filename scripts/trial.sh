#!/usr/bin/env bash
# The fault trial's full run (issue 45, item 1): 16 clients against three `serve` instances
# and two `project` processes for TRIAL_SECONDS (default 180) while a nemesis kills, freezes,
# partitions (nftables), skews (libfaketime) and restarts them, kills their Redis and freezes
# the publishing relay; with TRIAL_HA=1 on three Patroni nodes whose primary it also crashes,
# freezes and cuts off from etcd (TRIAL_KINDS=Kill,Skew,... picks kinds). Every operation is
# recorded, every unknown outcome settled under its key, the history checked against the log,
# the topic against the log, and the read models by `relations verify` (api/tests/trial/).
# The report is written to TRIAL_REPORT (default target/trial-report.md); RELIABILITY.md
# carries its figures. CI runs the same trial for 60 s inside `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh
scripts/kafka.sh
[ "${TRIAL_HA:-0}" = 1 ] && scripts/ha.sh install
export PATH="$HOME/.cargo/bin:$PATH"
export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"
export TRIAL_SECONDS="${TRIAL_SECONDS:-180}"
export TRIAL_REPORT="${TRIAL_REPORT:-$PWD/target/trial-report.md}"
mkdir -p "$(dirname "$TRIAL_REPORT")"
cargo test -p relations-api --test trial --locked -- the_trial_finds_no_anomaly_under_faults --exact --nocapture
echo "report: $TRIAL_REPORT"
