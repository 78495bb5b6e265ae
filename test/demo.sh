#!/usr/bin/env bash
# make demo: builds and installs the extension, starts a scratch cluster on a
# private port, and runs demo/demo.py: the story with two real client
# processes, an etcd lock (etcd on loopback, started and stopped by the demo)
# and a real SIGSTOP. Stops and removes everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
source test/lib/scratch.sh
scratch_cluster 54339
# Debian's psycopg, etcd3 and kazoo belong to /usr/bin/python3.
timeout -k 10 180 /usr/bin/python3 demo/demo.py
