#!/usr/bin/env bash
# make examples: builds and installs the extension, starts a scratch cluster
# on a private port, and runs every client example (examples/run.sh). Stops
# and removes the cluster afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
make -s >/dev/null
$SUDO make -s install >/dev/null
export FENCING_PGPORT=${FENCING_PGPORT:-54338}
test/cluster.sh stop
trap 'test/cluster.sh stop' EXIT
test/cluster.sh start
eval "$(test/cluster.sh env)"
bash examples/run.sh "$@"
