#!/usr/bin/env bash
# make demo: builds and installs the extension, starts a scratch cluster on a
# private port, and runs demo/demo.py: the story with two real client
# processes, an etcd lock (etcd on loopback, started and stopped by the demo)
# and a real SIGSTOP. Stops and removes everything it started.
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
# Debian's psycopg, etcd3 and kazoo belong to /usr/bin/python3.
timeout -k 10 180 /usr/bin/python3 demo/demo.py
