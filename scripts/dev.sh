#!/usr/bin/env bash
# Runs the service on 127.0.0.1:8080 against a local database `relations_dev`, plays a short
# demo against it (follow, friends, block, a refused follow; a post, the feed, a deletion; a
# mute and a removed follower; a locked account approving a follow request; a like and a
# comment; bob's notifications, grouped, his unread count and marker; a repost, and a
# post that cannot be reposted; a repost in a feed, a follow's preferences (notify,
# show_reposts) and a 'posted' notification; a quote, its notification, a policy that
# refuses the next one, and a detach; a bookmark and the bookmarks; where the operator page,
# the live feed and the live notifications are),
# then keeps serving until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/services.sh

export DATABASE_URL="${DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/relations_dev}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
# Development only, as the master key below (SPEC: at least 32 bytes).
export RELATIONS_JWT_SECRET="${RELATIONS_JWT_SECRET:-dev-only-secret-never-use-in-production}"
# Development only: a real deployment generates its own (`openssl rand -hex 32`) and keeps it.
export RELATIONS_MASTER_KEY="${RELATIONS_MASTER_KEY:-646576206f6e6c79206d6173746572206b65792c206e6576657220696e207072}"
export RELATIONS_HTTP_ADDR="${RELATIONS_HTTP_ADDR:-127.0.0.1:8080}"

admin_url="${DATABASE_URL%/*}/postgres"
db="${DATABASE_URL##*/}"
if ! psql "$admin_url" -Atqc "select 1 from pg_database where datname = '$db'" | grep -q 1; then
  psql "$admin_url" -qc "create database \"$db\""
fi

cargo build --release --bin relations
bin=target/release/relations
"$bin" serve &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null' EXIT INT TERM

base="http://$RELATIONS_HTTP_ADDR"
for _ in $(seq 1 50); do curl -fs "$base/readyz" >/dev/null && break; sleep 0.2; done

# Fresh ids each run, so the demo tells the same story every time.
a_id=$(( (RANDOM << 15 | RANDOM) + 1000 )); b_id=$((a_id + 1)); c_id=$((a_id + 2))
alice=$("$bin" token --user "$a_id")
bob=$("$bin" token --user "$b_id")
carol=$("$bin" token --user "$c_id")
cmd() { # cmd NAME TOKEN VERB TARGET
  printf '\n$ %s %s %s\n' "$1" "$3" "$4"
  curl -s -X POST "$base/api/v1/relation/$3" -H "authorization: Bearer $2" \
    -H 'content-type: application/json' -d "{\"target\": $4}"
  echo
}
echo "== demo: alice ($a_id) and bob ($b_id)"
cmd alice "$alice" follow "$b_id"
cmd bob "$bob" follow "$a_id"       # friends now
out=$(cmd alice "$alice" block "$b_id"); echo "$out"  # ends both follows in one transaction
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
cmd bob "$bob" follow "$a_id"       # 403 BLOCKED
printf '\n$ GET status (read-your-writes at %s)\n' "$position"
curl -s "$base/api/v1/relation/status?from=$b_id&to=$a_id&min_position=$position"; echo
printf '\n$ GET counts of alice\n'
curl -s "$base/api/v1/users/$a_id/counts?min_position=$position"; echo

echo
echo "== demo: carol ($c_id) follows alice, alice posts, carol reads her feed"
cmd carol "$carol" follow "$a_id"
printf '\n$ alice posts\n'
out=$(curl -s -X POST "$base/api/v1/posts" -H "authorization: Bearer $alice" \
  -H 'content-type: application/json' -d '{"content": "hello from alice"}'); echo "$out"
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
post_id=$(echo "$out" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
printf '\n$ GET carol\x27s new_count, then her feed (read-your-writes at %s)\n' "$position"
curl -s "$base/api/v1/feed/new_count?min_position=$position" -H "authorization: Bearer $carol"; echo
curl -s "$base/api/v1/feed?min_position=$position" -H "authorization: Bearer $carol"; echo
printf '\n$ bob deletes alice\x27s post (403), alice deletes it\n'
curl -s -X DELETE "$base/api/v1/posts/$post_id" -H "authorization: Bearer $bob"; echo
out=$(curl -s -X DELETE "$base/api/v1/posts/$post_id" -H "authorization: Bearer $alice"); echo "$out"
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
printf '\n$ GET carol\x27s feed again\n'
curl -s "$base/api/v1/feed?min_position=$position" -H "authorization: Bearer $carol"; echo

echo "== demo: carol mutes alice for an hour (private to carol), alice removes carol as a follower"
out=$(curl -s -X POST "$base/api/v1/relation/mute" -H "authorization: Bearer $carol" \
  -H 'content-type: application/json' -d "{\"target\": $a_id, \"duration_secs\": 3600}"); echo "$out"
curl -s "$base/api/v1/me/mutes" -H "authorization: Bearer $carol"; echo
cmd alice "$alice" remove_follower "$c_id"
echo
echo "== demo: bob locks his account; carol's follow becomes a request; bob approves it"
curl -s -X PUT "$base/api/v1/me/settings" -H "authorization: Bearer $bob" \
  -H 'content-type: application/json' -d '{"locked": true}'; echo
out=$(cmd carol "$carol" follow "$b_id"); echo "$out"   # "requested": true
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
curl -s "$base/api/v1/me/follow_requests?min_position=$position" -H "authorization: Bearer $bob"; echo
cmd bob "$bob" follow_requests/approve "$c_id"
echo
echo "== demo: bob posts; carol likes it and comments; bob's timeline shows the counts"
out=$(curl -s -X POST "$base/api/v1/posts" -H "authorization: Bearer $bob" \
  -H 'content-type: application/json' -d '{"content": "likes and comments"}'); echo "$out"
post_id=$(echo "$out" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
curl -s -X POST "$base/api/v1/posts/$post_id/like" -H "authorization: Bearer $carol"; echo
out=$(curl -s -X POST "$base/api/v1/posts/$post_id/comments" -H "authorization: Bearer $carol" \
  -H 'content-type: application/json' -d '{"content": "nice"}'); echo "$out"
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
curl -s "$base/api/v1/users/$b_id/posts?min_position=$position" -H "authorization: Bearer $carol"; echo
echo
echo "== demo: bob's notifications (carol liked and commented; her request, approved, is gone), grouped; then read"
printf '\n$ GET bob\x27s notifications and unread count\n'
out=$(curl -s "$base/api/v1/notifications?min_position=$position" -H "authorization: Bearer $bob"); echo "$out"
curl -s "$base/api/v1/notifications/unread_count?min_position=$position" -H "authorization: Bearer $bob"; echo
newest=$(echo "$out" | sed -n 's/^[^}]*"position":"\([^"]*\)".*/\1/p')
printf '\n$ bob marks them read up to %s\n' "$newest"
curl -s -X POST "$base/api/v1/notifications/read" -H "authorization: Bearer $bob" \
  -H 'content-type: application/json' -d "{\"up_to\": \"$newest\"}"; echo
curl -s "$base/api/v1/notifications/unread_count" -H "authorization: Bearer $bob"; echo
echo
echo "== demo: carol reposts alice's public post; bob's post (his account is locked) cannot be reposted"
out=$(curl -s -X POST "$base/api/v1/posts" -H "authorization: Bearer $alice" \
  -H 'content-type: application/json' -d '{"content": "worth passing on"}'); echo "$out"
shared=$(echo "$out" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
out=$(curl -s -X POST "$base/api/v1/posts/$shared/repost" -H "authorization: Bearer $carol"); echo "$out"
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
curl -s -X POST "$base/api/v1/posts/$post_id/repost" -H "authorization: Bearer $carol"; echo
curl -s "$base/api/v1/posts/$shared/reposts?min_position=$position"; echo
echo
echo "== demo: alice follows carol, asking to be notified of her posts: carol's repost brings alice's post into alice's feed (reposted_by); carol posts (a 'posted' notification); alice hides carol's reposts"
follow() { # follow NAME TOKEN TARGET PREFS
  printf '
$ %s follow %s %s
' "$1" "$3" "$4"
  curl -s -X POST "$base/api/v1/relation/follow" -H "authorization: Bearer $2" \
    -H 'content-type: application/json' -d "{\"target\": $3, $4}"
  echo
}
out=$(follow alice "$alice" "$c_id" '"notify": true'); echo "$out"
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
curl -s "$base/api/v1/feed?size=1&min_position=$position" -H "authorization: Bearer $alice"; echo
out=$(curl -s -X POST "$base/api/v1/posts" -H "authorization: Bearer $carol" \
  -H 'content-type: application/json' -d '{"content": "news from carol"}')
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
curl -s "$base/api/v1/notifications?types=posted&min_position=$position" -H "authorization: Bearer $alice"; echo
out=$(follow alice "$alice" "$c_id" '"show_reposts": false'); echo "$out"
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
curl -s "$base/api/v1/feed?size=5&min_position=$position" -H "authorization: Bearer $alice"; echo
echo
echo "== demo: carol quotes alice's post (alice is told: 'quoted'); alice closes it to quotes, so carol cannot quote it again (NOT_QUOTABLE); alice detaches carol's quote"
out=$(curl -s -X POST "$base/api/v1/posts" -H "authorization: Bearer $carol" \
  -H 'content-type: application/json' -d "{\"content\": \"so true\", \"quote_of\": \"$shared\"}"); echo "$out"
quoting=$(echo "$out" | sed -n 's/^{"post":{"id":"\([^"]*\)".*/\1/p')
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
curl -s "$base/api/v1/notifications?types=quoted&min_position=$position" -H "authorization: Bearer $alice"; echo
curl -s -X PUT "$base/api/v1/posts/$shared/quote_policy" -H "authorization: Bearer $alice" \
  -H 'content-type: application/json' -d '{"quote_policy": "nobody"}'; echo
curl -s -X POST "$base/api/v1/posts" -H "authorization: Bearer $carol" \
  -H 'content-type: application/json' -d "{\"content\": \"again\", \"quote_of\": \"$shared\"}"; echo
out=$(curl -s -X POST "$base/api/v1/posts/$quoting/detach" -H "authorization: Bearer $alice"); echo "$out"
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
curl -s "$base/api/v1/users/$c_id/posts?size=1&min_position=$position"; echo
echo
echo "== demo: bob bookmarks carol's quote (private: no count, nobody told); his bookmarks, and the post as he sees it (bookmarked: true)"
out=$(curl -s -X POST "$base/api/v1/posts/$quoting/bookmark" -H "authorization: Bearer $bob"); echo "$out"
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
curl -s "$base/api/v1/me/bookmarks?min_position=$position" -H "authorization: Bearer $bob"; echo
echo
d_id=$((a_id + 3)); e_id=$((a_id + 4))
dave=$("$bin" token --user "$d_id")
echo "== demo: dave ($d_id) follows alice and carol, who both follow eve ($e_id): eve is suggested to dave (followed by both); dave dismisses her, for good"
cmd alice "$alice" follow "$e_id" >/dev/null
cmd carol "$carol" follow "$e_id" >/dev/null
cmd dave "$dave" follow "$a_id" >/dev/null
out=$(cmd dave "$dave" follow "$c_id"); echo "$out"
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
printf '\n$ GET dave\x27s suggestions\n'
curl -s "$base/api/v1/me/suggestions?min_position=$position" -H "authorization: Bearer $dave"; echo
printf '\n$ dave dismisses eve\n'
out=$(curl -s -X POST "$base/api/v1/me/suggestions/$e_id/dismiss" -H "authorization: Bearer $dave"); echo "$out"
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
curl -s "$base/api/v1/me/suggestions?min_position=$position" -H "authorization: Bearer $dave"; echo
echo
echo "== demo: dave makes an exclusive list of alice: her posts move from his home feed to the list's feed"
out=$(curl -s -X POST "$base/api/v1/lists" -H "authorization: Bearer $dave" \
  -H 'content-type: application/json' -d '{"title": "alice only", "exclusive": true}'); echo "$out"
list=$(echo "$out" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
out=$(curl -s -X POST "$base/api/v1/lists/$list/members" -H "authorization: Bearer $dave" \
  -H 'content-type: application/json' -d "{\"users\": [$a_id]}"); echo "$out"
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
printf '\n$ GET the list\x27s feed (alice\x27s posts)\n'
curl -s "$base/api/v1/lists/$list/feed?size=2&min_position=$position" -H "authorization: Bearer $dave"; echo
printf '\n$ GET dave\x27s home feed (carol\x27s posts only)\n'
curl -s "$base/api/v1/feed?size=2&min_position=$position" -H "authorization: Bearer $dave"; echo
echo
echo "== demo: eve posts for her followers' comments only; dave (no follower) is refused COMMENTS_RESTRICTED; eve filters notifications from non-followers, so dave's like waits in the filtered list"
eve=$("$bin" token --user "$e_id")
out=$(curl -s -X POST "$base/api/v1/posts" -H "authorization: Bearer $eve" \
  -H 'content-type: application/json' -d '{"content": "followers may reply", "comment_policy": "followers"}'); echo "$out"
post_id=$(echo "$out" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
curl -s -X POST "$base/api/v1/posts/$post_id/comments" -H "authorization: Bearer $dave" \
  -H 'content-type: application/json' -d '{"content": "may I?"}'; echo
curl -s -X PUT "$base/api/v1/me/notification_policy" -H "authorization: Bearer $eve" \
  -H 'content-type: application/json' -d '{"not_followers": "filter"}'; echo
out=$(curl -s -X POST "$base/api/v1/posts/$post_id/like" -H "authorization: Bearer $dave"); echo "$out"
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
printf '\n$ GET eve\x27s filtered notifications (dave, who does not follow her, liked her post)\n'
curl -s "$base/api/v1/notifications?filtered=true&min_position=$position" -H "authorization: Bearer $eve"; echo
echo
echo "== demo: dave hides \"spoiler\" and is warned of \"finale\" in his home feed; carol posts both: the spoiler never shows, the finale shows marked (filtered)"
curl -s -X POST "$base/api/v1/filters" -H "authorization: Bearer $dave" \
  -H 'content-type: application/json' -d '{"phrase": "spoiler", "contexts": ["home"], "action": "hide"}'; echo
curl -s -X POST "$base/api/v1/filters" -H "authorization: Bearer $dave" \
  -H 'content-type: application/json' -d '{"phrase": "Finale", "whole_word": true, "contexts": ["home"], "action": "warn", "expires_in_secs": 86400}'; echo
curl -s -X POST "$base/api/v1/posts" -H "authorization: Bearer $carol" \
  -H 'content-type: application/json' -d '{"content": "SPOILER: the butler did it"}' >/dev/null
out=$(curl -s -X POST "$base/api/v1/posts" -H "authorization: Bearer $carol" \
  -H 'content-type: application/json' -d '{"content": "the finale airs tonight"}')
position=$(echo "$out" | sed -n 's/.*"position":"\([^"]*\)".*/\1/p')
printf '\n$ GET dave\x27s home feed (the finale marked, the spoiler left out)\n'
curl -s "$base/api/v1/feed?size=2&min_position=$position" -H "authorization: Bearer $dave"; echo
echo
admin=$("$bin" token --user 1 --admin)
echo "== operator page: $base/admin#token=$admin&user=$b_id"
echo "== carol's live feed: curl -N -H 'authorization: Bearer $carol' $base/api/v1/feed/stream"
echo "== bob's live notifications: curl -N -H 'authorization: Bearer $bob' $base/api/v1/notifications/stream"
echo "== serving on $base (Ctrl-C stops). A token: $bin token --user N"
wait $server
