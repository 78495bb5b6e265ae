#!/usr/bin/env bash
# make examples: builds and installs the extension, starts a scratch cluster
# on a private port, and runs every client example (examples/run.sh). Stops
# and removes the cluster afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
source test/lib/scratch.sh
scratch_cluster 54338
bash examples/run.sh "$@"
