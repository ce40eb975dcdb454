#!/usr/bin/env bash
# What the operations tests need, installed when missing (Debian packages): Prometheus (with
# promtool), which scrapes a running service to check ops/'s dashboard queries and alert rules,
# and Chromium, which renders the operator page. Idempotent.
set -euo pipefail

log() { printf '[ops] %s\n' "$*" >&2; }

missing=()
command -v prometheus >/dev/null || missing+=(prometheus)
command -v chromium >/dev/null || missing+=(chromium)
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The package may start its own server on :9090; the tests start theirs on free ports.
if command -v promtool >/dev/null; then
  promtool check rules "$(dirname "$0")/../ops/alerts.yml" >/dev/null
fi
