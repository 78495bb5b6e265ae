#!/usr/bin/env bash
# make stress: builds and installs the extension, starts a scratch cluster on
# a private port, and runs the stress (test/stress/run.sh) at STRESS_WRITES
# (default 100000). Stops and removes the cluster afterwards.
set -euo pipefail
cd "$(dirname "$0")/../.."
source test/lib/scratch.sh
scratch_cluster 54337
STRESS_WRITES=${STRESS_WRITES:-100000} bash test/stress/run.sh
