#!/usr/bin/env bash
# Stress with real pauses (test/stress/stress.py) against the server the libpq
# environment names (test/run-all.sh runs it on its scratch cluster; by hand:
# eval "$(test/cluster.sh env)" first). Prints "ok N - ..." lines and the
# figures. STRESS_WRITES sets the size: CI 10000, `make stress` 100000.
set -euo pipefail
cd "$(dirname "$0")"
exec /usr/bin/python3 stress.py
