#!/usr/bin/env bash
# pg-fencing's test suite (suite "client-node" of test/run-all.sh): installs the
# pinned dependencies (npm ci: package-lock.json), starts a scratch cluster of
# its own with the installed extension (test/cluster.sh, run as postgres under
# root, private port and socket directory), and runs
#   test/run.js       the library, in a database with the default SQL version
#   test/run.js       again, in a database with SQL version 1.4 ("[SQL 1.4]")
#   test/drivers.js   what docs/clients.md says of postgres (porsager) and Sequelize
#   tsc               index.d.ts against test/types.ts (tsc --noEmit --strict)
#   npm pack          the tarball installed into an empty project, example.js run
# as one stream of TAP lines ("ok N - ..."). Stops and removes the cluster on exit.
#
#   test/pooler.js    the lease path behind PgBouncer 1.18 and 1.24 (trixie
#                     chroot, as root) in transaction pooling, library preloaded
#
#   CLIENT_NODE_PGPORT   the scratch cluster's port (default 55445)
#   CLIENT_NODE_PG       a node-postgres version from npm instead of the pinned
#                        8.13.1 ("8": the newest 8.x; suite client-node-current)
#   CLIENT_NODE_PGBOUNCER_PORT   PgBouncer 1.18's port (default the cluster's
#                        port + 1); 1.24 listens on the next one
set -uo pipefail
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

n=0
rc=0
# step DESCRIPTION COMMAND...: the command's "ok N - " / "not ok N - " lines,
# renumbered into one stream; a failing exit without a "not ok" line is one.
step() {
    local what=$1 line bad=0 status
    shift
    "$@" >"$WORK/step.out" 2>&1
    status=$?
    while IFS= read -r line; do
        case $line in
            "ok "*) n=$((n + 1)); echo "ok $n - ${line#* - }" ;;
            "not ok "*) n=$((n + 1)); bad=1; echo "not ok $n - ${line#* - }" ;;
            *) echo "# $line" ;;
        esac
    done <"$WORK/step.out"
    if [ $status -ne 0 ]; then
        rc=1
        [ $bad -eq 0 ] && { n=$((n + 1)); echo "not ok $n - $what: exited with status $status"; }
    fi
}

cd "$HERE" || exit 1
npm ci --no-audit --no-fund --prefer-offline >"$WORK/npm.log" 2>&1 || { cat "$WORK/npm.log"; echo "not ok 1 - npm ci"; exit 1; }
# CLIENT_NODE_PG=8: the suite on npm's newest node-postgres 8.x instead of the
# pinned one (installed over it, not saved; the next npm ci restores the pin).
PG_SPEC=pg@8.13.1
if [ -n "${CLIENT_NODE_PG:-}" ]; then
    PG_SPEC=pg@$CLIENT_NODE_PG
    npm install --no-save --no-audit --no-fund "$PG_SPEC" >"$WORK/npm.log" 2>&1 ||
        { cat "$WORK/npm.log"; echo "not ok 1 - npm install $PG_SPEC"; exit 1; }
    n=$((n + 1))
    echo "ok $n - node-postgres $(node -p "require('pg/package.json').version") from npm ($PG_SPEC)"
fi
"$REPO/test/cluster.sh" stop
"$REPO/test/cluster.sh" start || { echo "not ok 1 - scratch cluster"; exit 1; }
eval "$("$REPO/test/cluster.sh" env)"
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION fencing' >/dev/null || exit 1
# The library must work while an older SQL version is installed: 1.4 has no
# fenced_*_result(), fencing_acquire_all() or fencing_check().
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE DATABASE sql14' >/dev/null || exit 1
psql -X -q -v ON_ERROR_STOP=1 -d sql14 -c "CREATE EXTENSION fencing VERSION '1.4'" >/dev/null || exit 1

step run.js node test/run.js
step "run.js (SQL 1.4)" env PGDATABASE=sql14 TEST_LABEL="[SQL 1.4]" node test/run.js
step drivers.js node test/drivers.js

# Behind Debian 12's PgBouncer 1.18 and (as root) Debian 13's 1.24 from the
# trixie chroot, transaction pooling, the library preloaded (TF003 on takeover).
psql -X -q -c "ALTER SYSTEM SET shared_preload_libraries = 'fencing'" >/dev/null
if [ "$(id -u)" = 0 ]; then PG_RUN="runuser -u postgres --"; else PG_RUN=; fi
$PG_RUN "$(pg_config --bindir)/pg_ctl" -D "$FENCING_CLUSTER_DIR/data" -l "$FENCING_CLUSTER_DIR/server.log" -w restart >/dev/null
PGB=$FENCING_CLUSTER_DIR/pgbouncer
PGB_PORT=${CLIENT_NODE_PGBOUNCER_PORT:-$((FENCING_PGPORT + 1))}
export PGBOUNCER124_DATABASES=pgb_lib:postgres
if command -v pgbouncer >/dev/null &&
    "$REPO/test/lib/pgbouncer124.sh" start-host "$PGB" "$PGB_PORT" "$FENCING_PGPORT" transaction 2; then
    step "pooler.js (PgBouncer 1.18)" node test/pooler.js "$PGB_PORT" pgb_lib "pgbouncer $(pgbouncer --version | head -1 | cut -d' ' -f2)"
    "$REPO/test/lib/pgbouncer124.sh" stop "$PGB"
fi
if "$REPO/test/lib/pgbouncer124.sh" available; then
    trap '"$REPO/test/lib/pgbouncer124.sh" stop "$PGB"124; cleanup' EXIT
    "$REPO/test/lib/pgbouncer124.sh" start "$PGB"124 $((PGB_PORT + 1)) "$FENCING_PGPORT" transaction 2 &&
        step "pooler.js (PgBouncer 1.24)" node test/pooler.js $((PGB_PORT + 1)) pgb_lib "pgbouncer 1.24"
    "$REPO/test/lib/pgbouncer124.sh" stop "$PGB"124
fi
types() {
    npx --no-install tsc -p tsconfig.json || { echo "not ok 1 - index.d.ts: tsc --strict rejects test/types.ts"; return 1; }
    echo "ok 1 - index.d.ts: test/types.ts, written against the API (pg.Client and pg.Pool's PoolClient), type-checks with tsc --strict"
    npx --no-install tsc -p tsconfig.esm.json || { echo "not ok 2 - index.d.mts: tsc (module nodenext) rejects test/esm/types.mts"; return 1; }
    echo "ok 2 - index.d.mts: an ES module importing 'pg-fencing' by name type-checks with module nodenext"
}
step "tsc" types

# The tarball installs into an empty project, loads, and runs the example.
pack() {
    npm pack --silent --pack-destination "$WORK" >"$WORK/pack.log" 2>&1 &&
        mkdir "$WORK/app" && cd "$WORK/app" && npm init -y >/dev/null &&
        npm install --no-audit --no-fund --prefer-offline "$WORK"/pg-fencing-*.tgz "$PG_SPEC" >"$WORK/install.log" 2>&1 ||
        { cat "$WORK/pack.log" "$WORK/install.log"; echo "not ok 1 - npm pack: the tarball installs into an empty project"; return 1; }
    echo "ok 1 - npm pack: the tarball installs into an empty project ($(tar -tzf "$WORK"/pg-fencing-*.tgz | tr '\n' ' '))"
    cp "$HERE/example.js" . && node example.js >"$WORK/example.out" 2>&1 &&
        grep -q '^refused: pgf_example Key (item)=(SKU-1): offered 0' "$WORK/example.out" ||
        { cat "$WORK/example.out"; echo "not ok 2 - example.js runs from the installed tarball"; return 1; }
    echo "ok 2 - example.js runs from the installed tarball: $(tr '\n' ' ' <"$WORK/example.out")"
    local files license
    files=$(tar -tzf "$WORK"/pg-fencing-*.tgz)
    license=$(node -p "require('pg-fencing/package.json').license")
    if grep -qx 'package/LICENSE' <<<"$files" && [ "$license" = PostgreSQL ] &&
        grep -q '^PostgreSQL License' node_modules/pg-fencing/LICENSE; then
        echo "ok 3 - the tarball carries LICENSE and package.json says license PostgreSQL"
    else
        echo "not ok 3 - the tarball carries LICENSE and package.json says license PostgreSQL (license: $license)"
    fi
    cp "$HERE/test/esm.mjs" . && node esm.mjs | sed 's/^\(not \)\{0,1\}ok [0-9]* - /&installed tarball: /'
    readme_snippets
}

# Each ```js block of the README, run as written from the installed tarball
# (an ES module, .mjs, unless it require()s: then CommonJS, .cjs).
readme_snippets() {
    local i=0 f ext
    while IFS= read -r f; do
        i=$((i + 1))
        ext=mjs
        grep -q 'require(' "$f" && ext=cjs
        mv "$f" "readme-$i.$ext"
        if node "readme-$i.$ext" >"$WORK/readme-$i.out" 2>&1; then
            echo "ok - README snippet $i runs as written ($ext): $(tr '\n' ' ' <"$WORK/readme-$i.out")"
        else
            echo "not ok - README snippet $i runs as written ($ext)"
            sed 's/^/    /' "$WORK/readme-$i.out"
        fi
    done < <(python3 - "$HERE/README.md" <<'PY'
import re, sys
for i, block in enumerate(re.findall(r"^```js\n(.*?)^```", open(sys.argv[1]).read(), re.S | re.M)):
    path = f"snippet-{i}.js"
    open(path, "w").write(block)
    print(path)
PY
)
    [ $i -gt 0 ] || echo "not ok - the README has a js snippet to run"
}
step "npm pack" pack
cd "$HERE" || exit 1
echo "1..$n"
exit $rc
