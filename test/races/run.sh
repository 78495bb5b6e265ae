#!/usr/bin/env bash
# Races forced with gdb, in windows isolation specs cannot reach, against the
# scratch cluster of test/run-all.sh (libpq environment exported). Needs root
# (or ptrace rights over the server's backends) and gdb.
set -euo pipefail
cd "$(dirname "$0")"
exec /usr/bin/python3 first_write_floor.py
