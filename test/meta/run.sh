#!/usr/bin/env bash
# PGXN META.json validation and the one-version check (test/meta/check.py).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
exec /usr/bin/python3 test/meta/check.py "$(pwd)"
