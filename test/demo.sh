#!/usr/bin/env bash
# make demo: builds and installs the extension, starts a scratch cluster on a
# private port, runs demo/demo.sql with psql (echoing every statement), stops.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
make -s >/dev/null
$SUDO make -s install >/dev/null
export FENCING_PGPORT=${FENCING_PGPORT:-54339}
test/cluster.sh stop
trap 'test/cluster.sh stop' EXIT
test/cluster.sh start
eval "$(test/cluster.sh env)"
psql -X -q -v ON_ERROR_STOP=1 -e -f demo/demo.sql
