#!/usr/bin/env bash
# Makes sure PostgreSQL and Redis run on loopback, installing them (Debian packages) when
# missing. Idempotent: on a machine where both already answer, it only checks.
#   scripts/services.sh            # ensure both
# The role `postgres` gets the password `postgres` on a fresh install, so the URLs below work
# whether local auth is trust (as on CI machines) or password.
set -euo pipefail

log() { printf '[services] %s\n' "$*" >&2; }

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then
    log "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    apt_updated=1
  fi
  log "installing $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

pg_ready() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }

ensure_postgres() {
  if ! command -v pg_isready >/dev/null || ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    apt_install postgresql postgresql-client
  fi
  if ! pg_ready; then
    local version
    version=$(ls /etc/postgresql | sort -V | tail -n 1)
    log "starting PostgreSQL $version"
    pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    for _ in $(seq 1 30); do pg_ready && break; sleep 1; done
  fi
  pg_ready || { log "PostgreSQL does not answer on 127.0.0.1:5432"; exit 1; }
  # A fresh install authenticates loopback by password: give the superuser a known one.
  if ! PGPASSWORD=postgres psql -h 127.0.0.1 -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
    log "setting the postgres role's password for loopback connections"
    su postgres -c "psql -qc \"ALTER USER postgres PASSWORD 'postgres'\"" >/dev/null
  fi
  # The tests run in parallel, each with pools of its own, beside the bench's and the demo's
  # servers: Debian's 100 connections run out. Raised once (a restart), like ha.sh's nodes.
  local connections
  connections=$(PGPASSWORD=postgres psql -h 127.0.0.1 -U postgres -d postgres -Atqc 'show max_connections')
  if [ "$connections" -lt 300 ]; then
    log "raising max_connections from $connections to 300 (restarts PostgreSQL)"
    PGPASSWORD=postgres psql -h 127.0.0.1 -U postgres -d postgres -qc 'ALTER SYSTEM SET max_connections = 300'
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main restart
    for _ in $(seq 1 30); do pg_ready && break; sleep 1; done
  fi
}

redis_ready() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

ensure_redis() {
  command -v redis-server >/dev/null || apt_install redis-server
  if ! redis_ready; then
    log "starting Redis"
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/relations.log
    for _ in $(seq 1 30); do redis_ready && break; sleep 0.5; done
  fi
  redis_ready || { log "Redis does not answer on 127.0.0.1:6379"; exit 1; }
}

# The storage fault tests (api/tests/api/storage_faults.rs) make fdatasync fail with strace's
# fault injection and mount a tmpfs for a cluster's WAL (mount is util-linux's, always there).
command -v strace >/dev/null || apt_install strace
# The fault trial (api/tests/trial/) cuts an instance off from PostgreSQL with nftables and
# skews one's clock with libfaketime.
command -v nft >/dev/null || apt_install nftables
ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || apt_install faketime

ensure_postgres
ensure_redis
log "PostgreSQL and Redis are up"
