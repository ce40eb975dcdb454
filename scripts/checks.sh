#!/usr/bin/env bash
# Layout checks from outside (issue 23), in about a second: each prints what breaks it.
# - no import circle between two files of a crate;
# - no non-test function over 80 lines;
# - no SQL on the log (`events`) outside store/;
# - no HTTP status, StatusCode or answer view in store/;
# - one relation fold (RelationChange::of), one log-tail loop (TailLoop).
set -euo pipefail
cd "$(dirname "$0")/.."
failed=0
fail() { echo "checks: $*" >&2; failed=1; }

python3 scripts/import_circles.py >/dev/null ||
  { python3 scripts/import_circles.py >&2; fail "import circle"; }
python3 scripts/long_functions.py 80 >&2 || fail "function over 80 lines"

sql_on_log=$(python3 - <<'PY'
import re, sys
sys.path.insert(0, "scripts")
from rustsrc import rust_files
pat = re.compile(r"(?is)\b(from|into|update|join|table|copy|truncate|exists)\s+(public\.)?events\b")
for crate, files in rust_files(".").items():
    if crate == "store":
        continue
    for f in files:
        s = open(f).read()
        for m in re.finditer(r'"(?:[^"\\]|\\.)*"', s, re.S):
            if pat.search(m.group(0)):
                print(f"{f}:{s.count(chr(10), 0, m.start()) + 1}")
PY
)
[ -z "$sql_on_log" ] || fail "SQL on the log outside store/: $sql_on_log"

http_in_store=$(grep -rnE '\b(StatusCode|axum|http::|IntoResponse|PostView|CommentView)\b' store/src store/Cargo.toml || true)
[ -z "$http_in_store" ] || fail "HTTP in store/: $http_in_store"

# The relation fold: only relations/fold.rs reads the users of a block or a request event on
# the read side, and no table the fold writes into matches on relation events itself.
folds=$(grep -rlE 'RelationEvent::(Blocked|Unblocked|FollowRequest[A-Za-z]*) *\{ *[a-z]' projections/src kafka/src api/src bench/src || true)
[ "$folds" = "projections/src/relations/fold.rs" ] || fail "relation events folded outside relations/fold.rs: $folds"
for f in $(grep -rlE 'impl RelationTables for' projections/src kafka/src api/src bench/src | grep -v relations/fold.rs); do
  ! grep -q 'RelationEvent::' "$f" || fail "$f folds relation events itself"
done
# The log tail: no function outside runtime/tail.rs both reads the log after a position and
# sleeps (waiting for more is TailLoop's); one-shot reads to the end (rebuild, verify) pass, and
# so does store/src/log/replay.rs: it reads up to what was committed when it began, waiting a
# bounded time for the horizon to reach it, then ends (no wake-up, no backoff: not a tail).
loops=$(python3 - <<'PY'
import re, sys
sys.path.insert(0, "scripts")
from rustsrc import rust_files, blank, without_tests, match_brace, line_of
for crate, files in rust_files(".").items():
    for f in files:
        if f.endswith(("runtime/tail.rs", "store/src/log/replay.rs")):
            continue
        text = without_tests(blank(open(f).read()))
        for m in re.finditer(r"\bfn\s+(\w+)[^{;]*\{", text):
            body = text[m.end() - 1:match_brace(text, m.end() - 1) + 1]
            if "read_after(" in body and re.search(r"\bsleep(_until)?\(", body):
                print(f"{f}:{line_of(text, m.start())} {m.group(1)}")
PY
)
[ -z "$loops" ] || fail "a log tail of its own (use runtime::TailLoop): $loops"
exit $failed
