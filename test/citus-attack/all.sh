#!/bin/bash
# Runs every scenario against one fresh cluster (ATK_PORTS, default 55601-55603).
. "$(dirname "$0")/lib.sh"
start_cluster
for s in "$(dirname "$0")"/1[0-9]_*.sh; do
    echo "== $(basename "$s")"
    ATK_REUSE=1 bash "$s"
done
[ "${ATK_KEEP:-}" = 1 ] || stop_cluster
