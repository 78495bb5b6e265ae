#!/usr/bin/env bash
# End-to-end suite against a real lock service: test/e2e/etcd.py (see there).
# Needs the libpq environment of a running scratch cluster (test/run-all.sh).
set -euo pipefail
cd "$(dirname "$0")"
exec timeout -k 10 110 /usr/bin/python3 etcd.py
