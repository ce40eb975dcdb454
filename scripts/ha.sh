#!/usr/bin/env bash
# A highly available PostgreSQL on this machine: Patroni (synchronous_mode_strict) + etcd +
# HAProxy, two PostgreSQL 15 nodes. Patroni alone decides who is primary; nothing here fails
# over by itself: `failover` only crashes the primary and watches.
#
#   scripts/ha.sh install    # install what is missing (apt: etcd, HAProxy, PostgreSQL; Patroni
#                            # from PyPI in a venv, PATRONI_VENV)
#   scripts/ha.sh start      # install what is missing, start etcd, the nodes and HAProxy;
#                            # returns once a write commits through the write endpoint
#                            # (a no-op when the cluster already runs)
#   scripts/ha.sh failover   # crash the primary's node (kill -9 of its Patroni agent and of its
#                            # PostgreSQL), wait for Patroni to promote the standby, bring the
#                            # crashed node back (it rejoins as the synchronous standby), and
#                            # print the time from the crash to writes committing again
#   scripts/ha.sh pause S    # freeze the primary's node (SIGSTOP of its Patroni agent and its
#                            # PostgreSQL) for S seconds, past the leader key's ttl: a standby is
#                            # promoted while the old primary lives on; then thaw it, and print the
#                            # times from the freeze to the promotion and to writes committing
#   scripts/ha.sh isolate S  # cut the primary's node off from etcd (nftables drops what its
#                            # processes send to etcd's port) for S seconds; the same times
#   scripts/ha.sh status     # the members, their roles, and the endpoints
#   scripts/ha.sh stop       # stop everything and delete the state dir (HA_KEEP=1 keeps it)
#
# Endpoints (env overrides in brackets):
#   write  postgres://postgres:postgres@127.0.0.1:5440/postgres  [HA_WRITE_PORT] the leader
#          (HAProxy checks Patroni's REST `OPTIONS /primary`)
#   read   postgres://postgres:postgres@127.0.0.1:5439/postgres  [HA_READ_PORT] a streaming
#          replica (`OPTIONS /replica`), the leader while none is up
#   nodes  127.0.0.1:5441, 5442 [HA_PG_PORT], Patroni REST 8441, 8442 [HA_REST_PORT],
#          etcd 2479 [HA_ETCD_PORT] (+1 for peers), HAProxy stats http://127.0.0.1:7440/
#   state  target/ha [HA_DIR]; logs in $HA_DIR/*.log; HA_NODES (default 2) nodes.
#
# Why strict synchronous mode: a commit is acknowledged only once the synchronous standby has
# flushed it, and with no standby left the primary refuses to acknowledge instead of accepting
# writes it could lose. On two nodes this means that after the primary's crash the promoted node
# takes writes when the crashed one is back as its standby (`failover` restarts it, as a real
# node would reboot; HA_REJOIN=0 leaves it down, and writes then wait). Run as root.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HA_DIR=${HA_DIR:-$ROOT/target/ha}
HA_NODES=${HA_NODES:-2}
HA_WRITE_PORT=${HA_WRITE_PORT:-5440}
HA_READ_PORT=${HA_READ_PORT:-5439}
HA_PG_PORT=${HA_PG_PORT:-5441}
HA_REST_PORT=${HA_REST_PORT:-8441}
HA_ETCD_PORT=${HA_ETCD_PORT:-2479}
HA_STATS_PORT=${HA_STATS_PORT:-7440}
HA_SCOPE=${HA_SCOPE:-relations-ha}
HA_REJOIN=${HA_REJOIN:-1}
PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
PASSWORD=postgres
PATRONI_VERSION=3.0.4
PATRONI_VENV=${PATRONI_VENV:-/opt/relations-patroni}

log() { printf '[ha] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

[ "$(id -u)" = 0 ] || die "run as root (the nodes run as the postgres user)"

ensure_packages() {
  local missing=()
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v etcdctl >/dev/null || missing+=(etcd-client)
  command -v haproxy >/dev/null || missing+=(haproxy)
  command -v psql >/dev/null || missing+=(postgresql-client)
  command -v nft >/dev/null || missing+=(nftables)
  [ -n "$PG_BIN" ] && [ -x "$PG_BIN/postgres" ] || missing+=(postgresql)
  /usr/bin/python3 -c 'import ensurepip' 2>/dev/null || missing+=(python3-venv)
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  # Patroni from PyPI, not Debian's 3.0.2: there a primary frozen past its ttl takes the leader
  # key back when it wakes (etcd3's update_leader put the key unconditionally; fixed in 3.0.3,
  # patroni/patroni#2689), demoting the standby promoted meanwhile and dropping the commits it
  # had acknowledged. The fault trial found it (RELIABILITY.md). 3.0.4, not 4.x: from 3.2 on,
  # Patroni raises a ttl under 20 s to 20, and failover would take more than 20 s.
  if [ "$("$PATRONI_VENV/bin/patroni" --version 2>/dev/null)" != "patroni $PATRONI_VERSION" ]; then
    log "installing Patroni $PATRONI_VERSION in $PATRONI_VENV"
    /usr/bin/python3 -m venv "$PATRONI_VENV"
    "$PATRONI_VENV/bin/pip" install -q "patroni[etcd3]==$PATRONI_VERSION" psycopg2-binary
  fi
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
pg_port() { echo $((HA_PG_PORT + $1 - 1)); }
rest_port() { echo $((HA_REST_PORT + $1 - 1)); }
node_dir() { echo "$HA_DIR/node$1"; }

# Starts `$@` detached (own session, survives this script), logging to $log, pid to $pidfile.
spawn() {
  local pidfile=$1 logfile=$2
  shift 2
  setsid "$@" >>"$logfile" 2>&1 </dev/null &
  echo $! >"$pidfile"
}

start_etcd() {
  alive "$HA_DIR/etcd.pid" && return
  log "starting etcd on 127.0.0.1:$HA_ETCD_PORT"
  local peer=$((HA_ETCD_PORT + 1))
  spawn "$HA_DIR/etcd.pid" "$HA_DIR/etcd.log" etcd --name ha --data-dir "$HA_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$HA_ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$HA_ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "ha=http://127.0.0.1:$peer" --initial-cluster-state new \
    --heartbeat-interval 100 --election-timeout 1000
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$HA_ETCD_PORT/health" >/dev/null && return
    sleep 0.1
  done
  die "etcd did not start (see $HA_DIR/etcd.log)"
}

write_patroni_config() {
  local n=$1 dir
  dir=$(node_dir "$n")
  mkdir -p "$dir"
  cat >"$dir/patroni.yml" <<EOF
scope: $HA_SCOPE
namespace: /service/
name: node$n
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$(rest_port "$n")
  connect_address: 127.0.0.1:$(rest_port "$n")
etcd3:
  hosts: 127.0.0.1:$HA_ETCD_PORT
bootstrap:
  dcs:
    # The leader key lives ttl seconds after its holder stops renewing it: the failure
    # detection time. loop_wait + 2 * retry_timeout <= ttl.
    ttl: 6
    loop_wait: 1
    retry_timeout: 2
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    synchronous_mode_strict: true
    # Every standby synchronous (Patroni names as many as stream, up to two). With one, a
    # standby left asynchronous may hold WAL the synchronous one never received when the
    # primary dies; Patroni may promote only the synchronous one, and the other must then
    # wait for pg_rewind before it can follow: strict mode takes no write meanwhile
    # (RELIABILITY.md: 6 of 53 failovers in a trial, 6 s more each). With both synchronous, both
    # may be promoted and Patroni's leader race takes the one with the most WAL, which the
    # other can follow as it is. A commit then waits for both standbys' flush.
    synchronous_node_count: 2
    postgresql:
      use_pg_rewind: true
      # No replication slots: a promoted node makes its standbys' slots only on its next loop,
      # so a standby that follows it at once is refused for want of its slot and tries again
      # only after wal_retrieve_retry_interval (5 s); strict mode takes no write meanwhile
      # (RELIABILITY.md: 5 s of every failover). wal_keep_size keeps the WAL a standby that
      # was briefly away needs; one away past it stays behind until `patronictl reinit`.
      use_slots: false
      parameters:
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_connections: 300
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 256MB
        hot_standby_feedback: 'on'
        synchronous_commit: 'on'
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
    - auth-local: trust
postgresql:
  listen: 127.0.0.1:$(pg_port "$n")
  connect_address: 127.0.0.1:$(pg_port "$n")
  data_dir: $dir/data
  bin_dir: $PG_BIN
  pgpass: $dir/pgpass
  authentication:
    superuser: {username: postgres, password: $PASSWORD}
    replication: {username: replicator, password: replicator}
    rewind: {username: postgres, password: $PASSWORD}
  parameters:
    unix_socket_directories: '$dir'
    shared_buffers: 64MB
    fsync: 'on'
    recovery_init_sync_method: syncfs
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 scram-sha-256
    - host all all 127.0.0.1/32 scram-sha-256
  remove_data_directory_on_rewind_failure: true
  remove_data_directory_on_diverged_timelines: true
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
EOF
  chown -R postgres:postgres "$dir"
  chmod 700 "$dir"
}

# Each node's processes live in a cgroup (v2) of their own, so that nftables can tell what a
# node sends from what its neighbours on the same loopback send (`isolate`).
cgroup_root() { { findmnt -n -t cgroup2 -o TARGET || true; } | head -n 1; }
node_cgroup() { echo "relations-ha-$HA_SCOPE-node$1"; }

start_node() {
  local n=$1 dir root cgroup
  dir=$(node_dir "$n")
  alive "$dir/patroni.pid" && return
  [ -f "$dir/patroni.yml" ] || write_patroni_config "$n"
  log "starting node$n (PostgreSQL 127.0.0.1:$(pg_port "$n"), Patroni REST :$(rest_port "$n"))"
  root=$(cgroup_root)
  cgroup=/dev/null
  if [ -n "$root" ]; then
    cgroup="$root/$(node_cgroup "$n")"
    mkdir -p "$cgroup"
    cgroup="$cgroup/cgroup.procs"
  fi
  # shellcheck disable=SC2016
  spawn "$dir/patroni.pid" "$dir/patroni.log" sh -c 'echo $$ >"$0" && exec "$@"' "$cgroup" \
    env HOME="$dir" \
    setpriv --reuid=postgres --regid=postgres --init-groups "$PATRONI_VENV/bin/patroni" "$dir/patroni.yml"
}

start_haproxy() {
  alive "$HA_DIR/haproxy.pid" && return
  local servers="" n
  for n in $(seq 1 "$HA_NODES"); do
    servers+="    server node$n 127.0.0.1:$(pg_port "$n") check port $(rest_port "$n")"$'\n'
  done
  cat >"$HA_DIR/haproxy.cfg" <<EOF
global
    maxconn 2000
    log stdout format raw local0 info

defaults
    mode tcp
    log global
    option tcplog
    timeout connect 2s
    timeout client 30m
    timeout server 30m
    timeout check 1s

# Writes: the node whose Patroni answers OPTIONS /primary with 200 (the leader). A node that stops
# being primary is marked down within 2 checks and its sessions are cut.
frontend write
    bind 127.0.0.1:$HA_WRITE_PORT
    default_backend primary

# Reads: a streaming replica (OPTIONS /replica); the leader while no replica is up.
frontend read
    bind 127.0.0.1:$HA_READ_PORT
    use_backend replicas if { nbsrv(replicas) gt 0 }
    default_backend primary

backend primary
    option httpchk OPTIONS /primary
    http-check expect status 200
    default-server inter 300ms fastinter 200ms downinter 300ms fall 2 rise 1 on-marked-down shutdown-sessions
$servers
backend replicas
    balance roundrobin
    option httpchk OPTIONS /replica
    http-check expect status 200
    default-server inter 300ms fastinter 200ms downinter 300ms fall 2 rise 1 on-marked-down shutdown-sessions
$servers
listen stats
    mode http
    bind 127.0.0.1:$HA_STATS_PORT
    stats enable
    stats uri /
EOF
  haproxy -c -q -f "$HA_DIR/haproxy.cfg" || die "bad HAProxy config"
  log "starting HAProxy: writes 127.0.0.1:$HA_WRITE_PORT, reads 127.0.0.1:$HA_READ_PORT"
  spawn "$HA_DIR/haproxy.pid" "$HA_DIR/haproxy.log" haproxy -db -f "$HA_DIR/haproxy.cfg"
}

psql_at() { # port, seconds, sql: one attempt, bounded in time
  PGPASSWORD=$PASSWORD PGCONNECT_TIMEOUT=2 timeout "$2" \
    psql -h 127.0.0.1 -p "$1" -U postgres -d postgres -XAtq -v ON_ERROR_STOP=1 -c "$3" 2>/dev/null
}
# A write that commits through synchronous replication: it returns once a primary has committed
# it and its synchronous standby has flushed it. It is not cancelled (a cancelled wait for the
# standby commits locally and says so only in a WARNING); it may wait up to `$1` seconds.
write_ok() {
  psql_at "$HA_WRITE_PORT" "${1:-3}" "CREATE TABLE IF NOT EXISTS ha_probe (id int PRIMARY KEY, at timestamptz);
    INSERT INTO ha_probe VALUES (1, clock_timestamp()) ON CONFLICT (id) DO UPDATE SET at = excluded.at" >/dev/null
}
replica_ok() { [ "$(psql_at "$HA_READ_PORT" 3 "SELECT pg_is_in_recovery()")" = t ]; }
sync_ok() { # some node is the synchronous standby (and so may be promoted)
  local n
  for n in $(seq 1 "$HA_NODES"); do
    curl -sf -o /dev/null --max-time 0.5 "http://127.0.0.1:$(rest_port "$n")/sync" && return 0
  done
  return 1
}

# Every other node streams from the primary and is a synchronous standby in Patroni's /sync
# key: the cluster is whole again, and the next fault is a single fault (a standby still
# rewinding after the last one could not take over, and one not yet in /sync could not race
# for it; see synchronous_node_count above).
all_streaming() {
  local n
  n=$(psql_at "$HA_WRITE_PORT" 3 "SELECT count(DISTINCT application_name) FROM pg_stat_replication WHERE state = 'streaming'") || return 1
  [ "${n:-0}" -ge $((HA_NODES - 1)) ] || return 1
  n=0
  local node want=$((HA_NODES - 1))
  [ "$want" -le 2 ] || want=2 # synchronous_node_count
  for node in $(seq 1 "$HA_NODES"); do
    curl -sf -o /dev/null --max-time 0.5 "http://127.0.0.1:$(rest_port "$node")/sync" && n=$((n + 1))
  done
  [ "$n" -ge "$want" ]
}

other_leader() { # the node number, other than $1 (if any), whose Patroni says it is primary, or nothing
  local n
  for n in $(seq 1 "$HA_NODES"); do
    [ "$n" = "$1" ] && continue
    if curl -sf -o /dev/null --max-time 0.5 "http://127.0.0.1:$(rest_port "$n")/primary"; then
      echo "$n"
      return
    fi
  done
}

leader() { other_leader ""; } # the node number whose Patroni says it is primary, or nothing

wait_for() { # seconds, description, command...
  local seconds=$1 what=$2 deadline
  shift 2
  deadline=$(awk -v a="$(now)" -v s="$seconds" 'BEGIN { printf "%.3f", a + s }')
  until "$@"; do
    awk -v a="$(now)" -v d="$deadline" 'BEGIN { exit !(a > d) }' && die "timed out waiting for $what"
    sleep 0.1
  done
}

cmd_start() {
  ensure_packages
  mkdir -p "$HA_DIR"
  chmod 755 "$HA_DIR"
  start_etcd
  local n
  for n in $(seq 1 "$HA_NODES"); do start_node "$n"; done
  start_haproxy
  local t0
  t0=$(now)
  wait_for 60 "a leader" leader
  wait_for 60 "a write through 127.0.0.1:$HA_WRITE_PORT" write_ok 30
  if [ "$HA_NODES" -ge 2 ]; then
    wait_for 60 "a replica through 127.0.0.1:$HA_READ_PORT" replica_ok
    wait_for 60 "a synchronous standby" sync_ok
    wait_for 60 "every standby streaming and synchronous" all_streaming
  fi
  log "up (leader node$(leader), ready after $(since "$t0") s): write postgres://postgres:$PASSWORD@127.0.0.1:$HA_WRITE_PORT/postgres, read postgres://postgres:$PASSWORD@127.0.0.1:$HA_READ_PORT/postgres"
}

postmaster_pid() { # node: the running postmaster's pid, or nothing
  local file
  file="$(node_dir "$1")/data/postmaster.pid"
  [ -f "$file" ] || return 0
  local pid
  pid=$(head -n 1 "$file")
  kill -0 "$pid" 2>/dev/null && echo "$pid"
  return 0
}

node_pids() { # node: its Patroni agent, its postmaster and every backend
  local dir agent pm pids
  dir=$(node_dir "$1")
  agent=$(cat "$dir/patroni.pid" 2>/dev/null || true)
  pm=$(postmaster_pid "$1")
  pids="$agent $pm"
  [ -n "$pm" ] && pids+=" $(ps -o pid= --ppid "$pm" | tr '\n' ' ')"
  echo "$pids"
}

# A node's machine dying: its Patroni agent and its PostgreSQL (postmaster and every backend)
# killed at once, with no chance to release the leader key or to shut down.
crash_node() {
  # shellcheck disable=SC2046
  kill -9 $(node_pids "$1") 2>/dev/null || true
  rm -f "$(node_dir "$1")/patroni.pid"
}

# After a fault on node `old` that began at `t0`: for `seconds` watches for another node's
# promotion and for writes through the write endpoint, then ends the fault (`end_fault`, a
# command) whatever they did; waits (if it must) for the promotion and writes after it, then
# for a synchronous standby again; prints the times from the fault's start.
ride_out() {
  local old=$1 t0=$2 seconds=$3 end_fault=$4 new="" t_promoted="" t_write=""
  while awk -v a="$t0" -v b="$(now)" -v s="$seconds" 'BEGIN { exit !(b - a < s) }'; do
    if [ -z "$t_promoted" ]; then
      new=$(other_leader "$old")
      [ -n "$new" ] && t_promoted=$(since "$t0") && log "node$new promoted by Patroni $t_promoted s after the fault began"
    elif [ -z "$t_write" ] && write_ok 1; then
      t_write=$(since "$t0")
    fi
    sleep 0.05
  done
  $end_fault
  if [ -z "$t_promoted" ]; then
    wait_for 60 "a node promoted" other_leader_found "$old"
    t_promoted=$(since "$t0")
  fi
  if [ -z "$t_write" ]; then
    wait_for 120 "writes through 127.0.0.1:$HA_WRITE_PORT" write_ok 60
    t_write=$(since "$t0")
  fi
  log "writes commit through 127.0.0.1:$HA_WRITE_PORT $t_write s after the fault began"
  wait_for 120 "a replica through 127.0.0.1:$HA_READ_PORT" replica_ok
  wait_for 120 "a synchronous standby" sync_ok
  wait_for 120 "every standby streaming and synchronous" all_streaming
  printf 'fault -> promoted: %s s\nfault -> writes accepted: %s s\n' "$t_promoted" "$t_write"
}
other_leader_found() { [ -n "$(other_leader "$1")" ]; }

PAUSED=""
thaw() {
  [ -n "$PAUSED" ] || return 0
  # shellcheck disable=SC2086
  kill -CONT $PAUSED 2>/dev/null || true
  PAUSED=""
  log "thawed"
}

cmd_pause() {
  local seconds=${1:-10} old t0
  old=$(leader)
  [ -n "$old" ] || die "no leader: is the cluster started?"
  PAUSED=$(node_pids "$old")
  t0=$(now)
  log "freezing node$old (the primary) for $seconds s: SIGSTOP of its Patroni agent and PostgreSQL"
  # Thawed however this ends (a timeout's `die` too): a frozen node left behind breaks the
  # cluster for good.
  trap thaw EXIT
  # shellcheck disable=SC2086
  kill -STOP $PAUSED
  ride_out "$old" "$t0" "$seconds" thaw
}

NFT_TABLE=""
heal() {
  [ -n "$NFT_TABLE" ] || return 0
  nft delete table inet "$NFT_TABLE" 2>/dev/null || true
  NFT_TABLE=""
  log "healed"
}

cmd_isolate() {
  local seconds=${1:-10} old t0 root
  old=$(leader)
  [ -n "$old" ] || die "no leader: is the cluster started?"
  root=$(cgroup_root)
  [ -n "$root" ] || die "no cgroup v2 hierarchy to tell the node's packets apart"
  command -v nft >/dev/null || die "nft is missing (apt-get install nftables)"
  NFT_TABLE="relations_ha_${HA_SCOPE//[^a-zA-Z0-9]/_}"
  # nftables names a cgroup by its path under /sys/fs/cgroup.
  local path="${root#/sys/fs/cgroup}/$(node_cgroup "$old")"
  path=${path#/}
  nft add table inet "$NFT_TABLE"
  nft add chain inet "$NFT_TABLE" out '{ type filter hook output priority 0; }'
  trap heal EXIT
  t0=$(now)
  # Level 1: the node's cgroup sits right under the hierarchy's root.
  nft add rule inet "$NFT_TABLE" out socket cgroupv2 level 1 "\"$path\"" tcp dport "$HA_ETCD_PORT" drop
  log "node$old (the primary) cut off from etcd for $seconds s"
  ride_out "$old" "$t0" "$seconds" heal
}

cmd_failover() {
  local old new t0 t_promoted t_write
  old=$(leader)
  [ -n "$old" ] || die "no leader: is the cluster started?"
  write_ok || die "the write endpoint does not take writes before the crash"
  t0=$(now)
  log "crashing node$old (the primary): kill -9 of its Patroni agent and PostgreSQL"
  crash_node "$old"
  new=""
  while [ -z "$new" ] || [ "$new" = "$old" ]; do
    awk -v a="$t0" -v b="$(now)" 'BEGIN { exit !(b - a > 60) }' && die "no node was promoted within 60 s"
    new=$(leader)
    sleep 0.05
  done
  t_promoted=$(since "$t0")
  log "node$new promoted by Patroni $t_promoted s after the crash"
  if [ "$HA_REJOIN" = 1 ]; then
    log "node$old comes back (as a rebooted machine would) and rejoins as a standby"
    start_node "$old"
  fi
  # One write at a time, each allowed to wait for its commit to be acknowledged: the moment it
  # returns is the moment the new primary acknowledges commits.
  wait_for 120 "writes through 127.0.0.1:$HA_WRITE_PORT" write_ok 60
  t_write=$(since "$t0")
  log "writes commit through 127.0.0.1:$HA_WRITE_PORT $t_write s after the crash"
  if [ "$HA_REJOIN" = 1 ]; then
    wait_for 60 "a replica through 127.0.0.1:$HA_READ_PORT" replica_ok
    wait_for 60 "a synchronous standby" sync_ok
    wait_for 120 "every standby streaming and synchronous" all_streaming
  fi
  printf 'crash -> promoted: %s s\ncrash -> writes accepted: %s s\n' "$t_promoted" "$t_write"
}

cmd_status() {
  local n
  for n in $(seq 1 "$HA_NODES"); do
    if [ -f "$(node_dir "$n")/patroni.yml" ]; then
      "$PATRONI_VENV/bin/patronictl" -c "$(node_dir "$n")/patroni.yml" list 2>/dev/null && break
    fi
  done
  for n in $(seq 1 "$HA_NODES"); do
    local role
    role=$(curl -s --max-time 0.5 "http://127.0.0.1:$(rest_port "$n")/patroni" |
      /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("role"), d.get("state"))' 2>/dev/null || echo "down")
    echo "node$n 127.0.0.1:$(pg_port "$n") $role"
  done
  if write_ok; then echo "write 127.0.0.1:$HA_WRITE_PORT up"; else echo "write 127.0.0.1:$HA_WRITE_PORT DOWN"; fi
  if replica_ok; then echo "read 127.0.0.1:$HA_READ_PORT up (replica)"; else echo "read 127.0.0.1:$HA_READ_PORT no replica"; fi
}

stop_pid() { # pidfile, signal, seconds to wait
  local file=$1 sig=$2 seconds=$3 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  if kill -0 "$pid" 2>/dev/null; then
    kill "-$sig" "$pid" 2>/dev/null || true
    for _ in $(seq 1 $((seconds * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

cmd_stop() {
  [ -d "$HA_DIR" ] || { log "not running"; return; }
  stop_pid "$HA_DIR/haproxy.pid" TERM 5
  local n pm
  # A node left frozen (a `pause` that died) would not stop.
  for n in $(seq 1 "$HA_NODES"); do
    # shellcheck disable=SC2046
    kill -CONT $(node_pids "$n") 2>/dev/null || true
  done
  for n in $(seq 1 "$HA_NODES"); do
    stop_pid "$(node_dir "$n")/patroni.pid" TERM 20 &
  done
  wait
  for n in $(seq 1 "$HA_NODES"); do
    pm=$(postmaster_pid "$n")
    if [ -n "$pm" ]; then
      setpriv --reuid=postgres --regid=postgres --init-groups \
        "$PG_BIN/pg_ctl" stop -s -m immediate -D "$(node_dir "$n")/data" >/dev/null 2>&1 || kill -9 "$pm" || true
    fi
  done
  stop_pid "$HA_DIR/etcd.pid" TERM 5
  local root
  root=$(cgroup_root)
  for n in $(seq 1 "$HA_NODES"); do
    local cgroup="$root/$(node_cgroup "$n")"
    [ -n "$root" ] && [ -d "$cgroup" ] || continue
    # Whatever of the node outlived its postmaster, then the cgroup.
    xargs -r kill -9 <"$cgroup/cgroup.procs" 2>/dev/null || true
    for _ in $(seq 1 20); do rmdir "$cgroup" 2>/dev/null && break; sleep 0.1; done
  done
  if [ "${HA_KEEP:-0}" = 1 ]; then
    log "stopped (state kept in $HA_DIR)"
  else
    rm -rf "$HA_DIR"
    log "stopped and removed $HA_DIR"
  fi
}

case "${1:-}" in
  install) ensure_packages ;;
  start) cmd_start ;;
  failover) cmd_failover ;;
  pause) cmd_pause "${2:-10}" ;;
  isolate) cmd_isolate "${2:-10}" ;;
  status) cmd_status ;;
  stop) cmd_stop ;;
  *) echo "usage: $0 install|start|failover|pause S|isolate S|status|stop" >&2; exit 2 ;;
esac
