#!/usr/bin/env bash
# Layout checks from outside (issue 23), in about a second: each prints what breaks it.
# - no import circle between two files of a crate;
# - no non-test function over 80 lines;
# - no SQL on the log (`events`) outside store/;
# - no HTTP status, StatusCode or answer view in store/;
# - one relation fold (RelationChange::of), one log-tail loop (TailLoop);
# - events told apart by type, not by name: no reader compares a stream's type or an event's
#   name as text (issue 43; the decoder, relations_domain::LogEvent::decode, is the one place);
# - the read side writes no write-side state: no projector writes a guard row (issue 43).
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
# Events are decoded once into relations_domain::LogEvent (issue 43): outside the decoder
# (domain/src/event.rs) and the log's own write path (store/src/log/), no code compares
# `stream_type` or `event_type` with text, matches a `::TYPE` constant, or names an event in a
# string literal compared with something. `relations replay --type` (api/src/cli/replay/mod.rs)
# filters by the names an operator typed, which is output, not reading.
by_name=$(python3 - <<'PY'
import re, sys
sys.path.insert(0, "scripts")
from rustsrc import rust_files, without_tests
pats = [
    re.compile(r"\b(stream_type|event_type)\b(\(\))?(\.as_str\(\))?\s*(==|!=)"),
    re.compile(r"(==|!=)\s*[\w.&]*\b(stream_type|event_type)\b"),
    re.compile(r"match\s+[\w.&]*\b(stream_type|event_type)\b"),
    re.compile(r"\b[A-Z]\w*::TYPE\s*=>"),
    re.compile(r"(==|!=)\s*\"(UserErased|Followed|Unfollowed|PostPublished|PostDeleted|CommentAdded|Liked|Unliked)\""),
]
allowed = ("domain/src/event.rs", "store/src/log/", "api/src/cli/replay/mod.rs")
for crate, files in rust_files(".").items():
    for f in files:
        if any(a in f for a in allowed):
            continue
        text = without_tests(open(f).read())
        for n, line in enumerate(text.split("\n"), 1):
            if line.lstrip().startswith("//"):
                continue
            if any(p.search(line) for p in pats):
                print(f"{f}:{n}: {line.strip()}")
PY
)
[ -z "$by_name" ] || fail "events told apart by name outside the decoder (match relations_domain::LogEvent): $by_name"
# The read side writes no write-side state (issue 43): outside the checks of `verify`, which
# read them, nothing in projections/ names the store's guard tables in SQL that changes them.
guard_writes=$(grep -rlE "(UPDATE|INSERT INTO|DELETE FROM)\s+(follow_guard|follow_edges|pending_requests|account_locks|hidden_graphs|erased_users)\b" projections/src || true)
[ -z "$guard_writes" ] || fail "the read side writes write-side state: $guard_writes"
exit $failed
