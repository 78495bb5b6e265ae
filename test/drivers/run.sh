#!/usr/bin/env bash
# Driver-level tests against the scratch cluster of test/run-all.sh (libpq
# environment already exported). Debian's psycopg belongs to /usr/bin/python3.
set -euo pipefail
cd "$(dirname "$0")"
exec /usr/bin/python3 psycopg_tokens.py
