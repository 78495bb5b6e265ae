#!/usr/bin/env bash
# Suite "conformance" of test/run-all.sh: clients/conformance/run.py against
# every agent present under clients/conformance/agents/ (PROTOCOL.md), on a
# scratch cluster of its own (CONFORMANCE_PGPORT, default 55450). TAP lines,
# then a table of the results per library.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# The runner's own timing rules first (no cluster, a second): a wrong rule
# would make every library's verdict meaningless.
/usr/bin/python3 "$HERE/run.py" --self-test || exit 1
exec nice /usr/bin/python3 "$HERE/run.py" "$@"
