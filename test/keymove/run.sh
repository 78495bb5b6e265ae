#!/usr/bin/env bash
# Key-move stress (test/keymove/stress.py) against the server the libpq
# environment names (test/run-all.sh runs it on its scratch cluster; by hand:
# eval "$(test/cluster.sh env)" first). Prints "ok N - ..." lines.
set -euo pipefail
cd "$(dirname "$0")"
exec /usr/bin/python3 stress.py
