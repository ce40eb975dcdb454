#!/usr/bin/env bash
# What the Kafka side needs, installed when missing: cmake and libcurl (rdkafka builds its
# bundled librdkafka with them), nisshi (a Kafka-protocol broker in Rust, formerly tansu; it
# needs rustc 1.96, so it is built with the nightly toolchain: `cargo +nightly install`, about
# sixteen minutes the first time, then the binary in ~/.cargo/bin is reused) and Python's
# confluent-kafka (the outside client the tests read the topic with). Idempotent.
#   scripts/kafka.sh              # install what is missing
#   scripts/kafka.sh build-deps   # only what building rdkafka needs (cmake, libcurl, g++)
#   scripts/kafka.sh start        # and run a broker on 127.0.0.1:9092 (memory storage) unless
#                                 # one answers there; KAFKA_TOPIC is created by the service
# Production runs a real Kafka cluster instead: see README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[kafka] %s\n' "$*" >&2; }
export PATH="$HOME/.cargo/bin:$PATH"

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    apt_updated=1
  fi
  log "installing $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

command -v cmake >/dev/null || apt_install cmake
dpkg -s libcurl4-openssl-dev >/dev/null 2>&1 || apt_install libcurl4-openssl-dev
command -v c++ >/dev/null || apt_install g++
[ "${1:-}" = build-deps ] && exit 0
if ! command -v nisshi >/dev/null; then
  rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
  log "building the nisshi broker (cargo +nightly install, about sixteen minutes)"
  nice cargo +nightly install nisshi --version 0.8.1 --locked --quiet
fi
if ! python3 -c 'import confluent_kafka' 2>/dev/null; then
  log "installing Python's confluent-kafka"
  python3 -m pip install --quiet --disable-pip-version-check confluent-kafka
fi

if [ "${1:-}" = start ]; then
  if (exec 3<>/dev/tcp/127.0.0.1/9092) 2>/dev/null; then
    log "a broker answers on 127.0.0.1:9092"
  else
    mkdir -p target
    log "starting nisshi on 127.0.0.1:9092 (log: target/nisshi.log)"
    nohup nisshi broker --listener-url tcp://127.0.0.1:9092 \
      --advertised-listener-url tcp://127.0.0.1:9092 \
      --storage-engine memory://nisshi/ >target/nisshi.log 2>&1 &
    for _ in $(seq 1 50); do (exec 3<>/dev/tcp/127.0.0.1/9092) 2>/dev/null && break; sleep 0.2; done
  fi
fi
