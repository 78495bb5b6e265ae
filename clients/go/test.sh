#!/usr/bin/env bash
# The Go client's suite: fetches Go 1.26 and pgx v5 as Debian sid packages
# into a cache without installing them (deps.sh, once), builds an application
# module that requires this one as the README says, go vet, then go test
# -race against a scratch cluster of its own with the
# extension, as the postgres user's server on a private port and socket
# directory. Prints TAP-like lines: "ok N - go vet", one per go test test
# and subtest ("--- PASS"/"--- FAIL"), and a last check that go test passed.
#
# Behind Debian 12's PgBouncer 1.18 (port + 1) and, as root, Debian 13's 1.24
# from the trixie chroot (port + 2, test/lib/pgbouncer124.sh): the pooler tests;
# then, on the cluster restarted with the library preloaded, a takeover through
# each (TestTakeoverBehindPgBouncer*: TF003 as ErrLeaseTakenOver).
#
#   CLIENT_GO_PGPORT   the scratch cluster's port (default 55447)
set -uo pipefail
cd "$(dirname "$0")"
HERE=$(pwd)
ROOT=$(cd ../.. && pwd)
PORT=${CLIENT_GO_PGPORT:-55447}
export FENCING_PGPORT=$PORT
export FENCING_CLUSTER_DIR=${CLIENT_GO_DIR:-/tmp/fencing-client-go-$PORT}
export GOCACHE=${GOCACHE:-$([ -w /var/cache ] && echo /var/cache/fencing-go/build-cache || echo "$ROOT/build/go-cache")} GOPATH=${GOPATH:-$ROOT/build/gopath}

n=0
check() {  # check NAME STATUS
    n=$((n + 1))
    if [ "$2" = 0 ]; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}

# Offline: the toolchain and the modules come from the cache, no proxy, no sum DB.
env=$(./deps.sh)
check "Go 1.26 and pgx v5 from Debian sid's packages (deps.sh)" $?
eval "$env"
go version >&2
go vet ./...
check "go vet" $?

"$ROOT/test/cluster.sh" stop >/dev/null 2>&1
trap '"$ROOT/test/cluster.sh" stop' EXIT
"$ROOT/test/cluster.sh" start || { check "scratch cluster" 1; exit 1; }
eval "$("$ROOT/test/cluster.sh" env)"
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE gotest" &&
    PGDATABASE=gotest psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION fencing"
check "CREATE EXTENSION fencing" $?
export PGDATABASE=gotest
RUN=1 ./readme-check.sh
check "an application module requires the library, builds and runs the README example" $?
# PgBouncer (Debian 12: 1.18) in transaction mode, one server connection for every client.
if [ -x /usr/sbin/pgbouncer ]; then
    BDIR=$FENCING_CLUSTER_DIR/pgbouncer
    mkdir -p "$BDIR"
    cat >"$BDIR/pgbouncer.ini" <<INI
[databases]
gotest = host=$PGHOST port=$PGPORT dbname=gotest user=${PGUSER:-postgres}
gotest_tk = host=$PGHOST port=$PGPORT dbname=gotest user=${PGUSER:-postgres} pool_size=3
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $((PORT + 1))
unix_socket_dir =
auth_type = trust
auth_file = $BDIR/users.txt
pool_mode = transaction
default_pool_size = 1
max_client_conn = 50
logfile = $BDIR/pgbouncer.log
pidfile = $BDIR/pgbouncer.pid
INI
    echo '"postgres" ""' >"$BDIR/users.txt"
    [ "$(id -u)" = 0 ] && chown -R postgres "$BDIR"
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- /usr/sbin/pgbouncer -d "$BDIR/pgbouncer.ini"
    else
        /usr/sbin/pgbouncer -d "$BDIR/pgbouncer.ini"
    fi
    check "PgBouncer $(/usr/sbin/pgbouncer --version | head -1 | cut -d' ' -f2) in transaction mode" $?
    trap 'kill "$(cat "$BDIR/pgbouncer.pid" 2>/dev/null)" 2>/dev/null; "$ROOT/test/cluster.sh" stop' EXIT
    export FENCING_GO_PGBOUNCER_PORT=$((PORT + 1))
fi

# PgBouncer 1.24 (Debian 13, max_prepared_statements) from the trixie chroot, the same way.
if "$ROOT/test/lib/pgbouncer124.sh" available; then
    B124=$FENCING_CLUSTER_DIR/pgbouncer124
    PGBOUNCER124_DATABASES="gotest:gotest gotest_tk:gotest:3" "$ROOT/test/lib/pgbouncer124.sh" start "$B124" $((PORT + 2)) "$PORT"
    check "PgBouncer 1.24 in transaction mode (trixie chroot)" $?
    trap 'kill "$(cat "${BDIR:-/nonexistent}/pgbouncer.pid" 2>/dev/null)" 2>/dev/null; "$ROOT/test/lib/pgbouncer124.sh" stop "$B124"; "$ROOT/test/cluster.sh" stop' EXIT
    export FENCING_GO_PGBOUNCER124_PORT=$((PORT + 2))
fi

log=$ROOT/build/test-logs/client-go-gotest.log
mkdir -p "$(dirname "$log")"
# (the takeover-behind-a-pooler tests run below, on the preloaded cluster)
go test -race -count=1 -v -timeout 300s -skip '^TestTakeoverBehindPgBouncer' ./... >"$log" 2>&1
rc=$?
cat "$log" >&2
while read -r verdict name; do
    [ "$verdict" = PASS ]
    check "$name" $?
done < <(sed -nE 's/^ *--- (PASS|FAIL|SKIP): ([^ ]+).*/\1 \2/p' "$log")
check "go test ./... exit status" $rc

# A takeover through each pooler with the library preloaded (TF003): the
# cluster restarted with shared_preload_libraries = fencing, then only the
# TestTakeoverBehindPgBouncer* tests, which must pass (a skip is a failure).
psql -X -q -c "ALTER SYSTEM SET shared_preload_libraries = 'fencing'" >/dev/null
if [ "$(id -u)" = 0 ]; then PG_RUN="runuser -u postgres --"; else PG_RUN=; fi
$PG_RUN "$(pg_config --bindir)/pg_ctl" -D "$FENCING_CLUSTER_DIR/data" -l "$FENCING_CLUSTER_DIR/server.log" -w restart >/dev/null
[ "$(psql -qAtX -c 'SHOW shared_preload_libraries')" = fencing ]
check "the cluster restarted with shared_preload_libraries = fencing" $?
want=()
if [ -n "${FENCING_GO_PGBOUNCER_PORT:-}" ]; then
    export FENCING_GO_TAKEOVER_PGBOUNCER_PORT=$FENCING_GO_PGBOUNCER_PORT
    want+=(TestTakeoverBehindPgBouncer)
fi
if [ -n "${FENCING_GO_PGBOUNCER124_PORT:-}" ]; then
    export FENCING_GO_TAKEOVER_PGBOUNCER124_PORT=$FENCING_GO_PGBOUNCER124_PORT
    want+=(TestTakeoverBehindPgBouncer124)
fi
tlog=$ROOT/build/test-logs/client-go-takeover.log
go test -race -count=1 -v -timeout 120s -run '^TestTakeoverBehindPgBouncer' . >"$tlog" 2>&1
trc=$?
cat "$tlog" >&2
for name in "${want[@]}"; do
    grep -q -- "^--- PASS: $name " "$tlog"
    check "$name (preloaded: TF003 through the pooler is ErrLeaseTakenOver)" $?
done
check "go test -run TestTakeoverBehindPgBouncer exit status" $trc
[ $rc = 0 ] && [ $trc = 0 ]
