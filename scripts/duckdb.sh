#!/usr/bin/env bash
# DuckDB (the PyPI wheel; pytz for its TIMESTAMPTZ values) in a venv under target/, for the analytics tests
# (api/tests/api/analytics.rs), which run docs/analytics.md's queries with it. Made on first
# use, like schemathesis's; scripts/test.sh makes it before the tests, a lone test run does too.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/duckdb-venv
if ! "$venv/bin/python" -c 'import duckdb, pytz' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "duckdb==2.0.0" "pytz==2025.2"
fi
