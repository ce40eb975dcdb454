#!/usr/bin/env bash
# Schemathesis against the served OpenAPI document: every operation, every check, a bounded
# number of examples and a fixed seed; any failure fails the run. Starts its own `relations
# serve` on a database of its own, named after its port so that runs on other ports never touch
# it (dropped afterwards). Installs schemathesis into a venv under target/ on first use.
# Three passes: a valid admin token, with the stateful phase following the document's links
# (a post's id into its likes, comments and reposts; a comment's into its replies, likes and
# pins; a relation's users into their lists); the operations that revoke, ban or erase, under
# another user; and every operation with a token that has been logged out first (each must
# answer as documented: 401 wherever a token sent is checked, never 5xx).
#   scripts/schemathesis.sh            # the debug build (cargo build first)
#   RELATIONS_BIN=target/release/relations scripts/schemathesis.sh
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/schemathesis-venv
if [ ! -x "$venv/bin/schemathesis" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==4.32.5"
fi
bin=${RELATIONS_BIN:-target/debug/relations}
admin_url=${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}
port=${SCHEMATHESIS_PORT:-18199}
db=relations_schemathesis_$port
psql "$admin_url" -qc "drop database if exists $db with (force)" >/dev/null
psql "$admin_url" -qc "create database $db" >/dev/null
secret=schemathesis-secret-0123456789abcdef0123
log=target/schemathesis-serve.log
DATABASE_URL="${admin_url%/*}/$db" \
  REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379} \
  RELATIONS_REDIS_PREFIX="schemathesis:$$:" \
  RELATIONS_JWT_SECRET=$secret \
  RELATIONS_MASTER_KEY=736368656d617468657369732d6f6e6c7920206d6173746572206b6579212121 \
  RELATIONS_HTTP_ADDR=127.0.0.1:$port \
  RELATIONS_RATE_CAPACITY=1000000000 RELATIONS_RATE_REFILL_PER_SEC=1000000 \
  RELATIONS_CATCH_UP_WAIT_MS=200 RELATIONS_FOLLOW_LIMIT=1000000 \
  "$bin" serve >"$log" 2>&1 &
pid=$!
cleanup() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  psql "$admin_url" -qc "drop database if exists $db with (force)" >/dev/null 2>&1 || true
}
trap cleanup EXIT
for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break
  sleep 0.1
done
# An admin token. Its user is not a boundary value the fuzzer favours (1, 2^63-1), so a target
# equal to the actor (400 SELF_RELATION, a rule the schema cannot state) stays out of the
# positive cases. Operations that would revoke the token, ban or erase its user (logout, revoke,
# ban, erase, DELETE /me) run in a second pass under another user, so they cannot lock the
# first pass out (an erased caller gets 401 everywhere: a pass that erased itself early tested
# little more than that). The live
# streams (feed, notifications) never end, so they are left to their own tests
# (tests/api/stream.rs, tests/api/notifications.rs).
token=$(RELATIONS_JWT_SECRET=$secret "$bin" token --user 7777777 --admin --ttl-secs 3600)
common=(--checks all --max-examples "${SCHEMATHESIS_EXAMPLES:-25}" --seed 20261123
  --generation-deterministic --suppress-health-check all --no-color)
"$venv/bin/schemathesis" --config-file scripts/schemathesis.toml run "http://127.0.0.1:$port/openapi.json" "${common[@]}" \
  -H "Authorization: Bearer $token" \
  --exclude-path-regex '/(logout|revoke|ban|unban|erase)$|^/api/v1/me$|/(feed|notifications)/stream$'
token=$(RELATIONS_JWT_SECRET=$secret "$bin" token --user 7777778 --admin --client fuzz --ver 1 --bat 1 --ttl-secs 3600)
# The links lead out of these few operations: no stateful phase. The erasures get a user of
# their own, as the ban's pass would otherwise test its last operations erased.
"$venv/bin/schemathesis" --config-file scripts/schemathesis.toml run "http://127.0.0.1:$port/openapi.json" "${common[@]}" \
  -H "Authorization: Bearer $token" --phases examples,coverage,fuzzing \
  --include-path-regex '/(revoke|ban|unban)$'
token=$(RELATIONS_JWT_SECRET=$secret "$bin" token --user 7777780 --admin --ttl-secs 3600)
"$venv/bin/schemathesis" --config-file scripts/schemathesis.toml run "http://127.0.0.1:$port/openapi.json" "${common[@]}" \
  -H "Authorization: Bearer $token" --phases examples,coverage,fuzzing \
  --include-path-regex '/erase$|^/api/v1/me$'
# Logout, then continue: the token's client is refused from the logout's answer on (and on every
# instance within a second), so every operation gets a token that is checked and refused. The
# live streams are in this pass: a refused token gets 401 at once, no stream.
token=$(RELATIONS_JWT_SECRET=$secret "$bin" token --user 7777779 --client fuzz-out --ver 1 --ttl-secs 3600)
curl -fs -X POST -H "Authorization: Bearer $token" "http://127.0.0.1:$port/api/v1/me/logout" >/dev/null
for _ in $(seq 1 50); do
  status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
    "http://127.0.0.1:$port/api/v1/users/1/counts")
  [ "$status" = 401 ] && break
  sleep 0.1
done
[ "$status" = 401 ] || { echo "the logged-out token is still accepted ($status)" >&2; exit 1; }
# The document itself is a routed request too (401 with this token): it is read without one.
schema=target/schemathesis-openapi-$port.json
curl -fs "http://127.0.0.1:$port/openapi.json" -o "$schema"
"$venv/bin/schemathesis" --config-file scripts/schemathesis.toml run "$schema" \
  --url "http://127.0.0.1:$port" "${common[@]}" --phases examples,coverage,fuzzing \
  -H "Authorization: Bearer $token"
