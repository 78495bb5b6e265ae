#!/usr/bin/env bash
# The meta suite: PGXN META.json validation and the one-version check
# (test/meta/check.py), then the include layering of src/ (test/meta/layers.py).
# Each prints "ok N - ..." lines and "N passed, N failed"; both always run.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
rc=0
/usr/bin/python3 test/meta/check.py "$(pwd)" || rc=1
/usr/bin/python3 test/meta/layers.py "$(pwd)" || rc=1
exit $rc
