#!/usr/bin/env bash
# pg-fencing's test suite (suite "client-node" of test/run-all.sh): installs the
# pinned dependencies (npm ci: package-lock.json), starts a scratch cluster of
# its own with the installed extension (test/cluster.sh, run as postgres under
# root, private port and socket directory), runs test/run.js (TAP lines) and
# packs the npm tarball. Stops and removes the cluster on exit.
#
#   CLIENT_NODE_PGPORT   the scratch cluster's port (default 55445)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
export FENCING_PGPORT=${CLIENT_NODE_PGPORT:-55445}
export FENCING_CLUSTER_DIR=${CLIENT_NODE_DIR:-/tmp/fencing-client-node-$FENCING_PGPORT}
WORK=$(mktemp -d /tmp/pg-fencing-test.XXXXXX)

cleanup() {
    "$REPO/test/cluster.sh" stop || true
    rm -rf "$WORK"
}
trap cleanup EXIT

cd "$HERE"
npm ci --no-audit --no-fund --prefer-offline >"$WORK/npm.log" 2>&1 || { cat "$WORK/npm.log"; exit 1; }
"$REPO/test/cluster.sh" stop
"$REPO/test/cluster.sh" start
eval "$("$REPO/test/cluster.sh" env)"
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION fencing' >/dev/null

rc=0
node test/run.js || rc=$?

# The tarball installs into an empty project and loads.
if npm pack --silent --pack-destination "$WORK" >"$WORK/pack.log" 2>&1 &&
    mkdir "$WORK/app" && cd "$WORK/app" && npm init -y >/dev/null &&
    npm install --no-audit --no-fund --prefer-offline "$WORK"/pg-fencing-*.tgz pg@8.13.1 >"$WORK/install.log" 2>&1 &&
    node -e "const f = require('pg-fencing'); process.exit(typeof f.Lease.acquire === 'function' && f.MAX_TOKEN === 9223372036854775807n ? 0 : 1)"; then
    echo "ok - npm pack: the tarball installs into an empty project and loads"
    cp "$HERE/example.js" . && if node example.js >"$WORK/example.out" 2>&1 && grep -q '^refused: pgf_example Key (item)=(SKU-1): offered 0' "$WORK/example.out"; then
        echo "ok - example.js runs from the installed tarball: $(tr '\n' ' ' <"$WORK/example.out")"
    else
        sed 's/^/# /' "$WORK/example.out"
        echo "not ok - example.js runs from the installed tarball"
        rc=1
    fi
else
    cat "$WORK/pack.log" "$WORK/install.log" 2>/dev/null
    echo "not ok - npm pack: the tarball installs into an empty project and loads"
    rc=1
fi
exit $rc
