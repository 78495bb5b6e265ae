#!/usr/bin/env bash
# Runs every client example against a running server (the libpq environment:
# PGHOST, PGPORT, PGUSER; test/cluster.sh env gives the scratch cluster's), in
# a fresh database "fencing_examples", with a one-member etcd on loopback for
# the Python example. Prints "ok N - <client>: ..." / "not ok N - ..." lines.
#
#   eval "$(bash test/cluster.sh env)"; bash examples/run.sh [client ...]
set -uo pipefail
cd "$(dirname "$0")"
EX=$(pwd)
CLIENTS=("$@")
[ ${#CLIENTS[@]} -eq 0 ] && CLIENTS=(psql python cpp node java django sqlalchemy)

export PGDATABASE=fencing_examples
psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS fencing_examples" -c "CREATE DATABASE fencing_examples" >/dev/null || exit 1
psql -X -q -c "CREATE EXTENSION fencing" >/dev/null || exit 1

WORK=$(mktemp -d /tmp/fencing-examples.XXXXXX)
ETCD_PID=
cleanup() {
    [ -n "$ETCD_PID" ] && kill "$ETCD_PID" 2>/dev/null && wait "$ETCD_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start_etcd() {
    local port peer
    port=$(free_port) peer=$(free_port)
    /usr/bin/etcd --name examples --data-dir "$WORK/etcd" \
        --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
        --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
        --initial-cluster "examples=http://127.0.0.1:$peer" >"$WORK/etcd.log" 2>&1 &
    ETCD_PID=$!
    export ETCD_ENDPOINT=127.0.0.1:$port
    for _ in $(seq 100); do
        /usr/bin/python3 -c "import etcd3; etcd3.client(host='127.0.0.1', port=$port, timeout=1).status()" 2>/dev/null && return 0
        sleep 0.2
    done
    cat "$WORK/etcd.log"
    return 1
}

n=0
failed=0
# run CLIENT COMMAND...: the command's "ok - ..." lines become numbered TAP
# lines; a non-zero exit without a "not ok" line is a failure too.
run() {
    local client=$1 rc line bad=0
    shift
    "$@" >"$WORK/$client.out" 2>"$WORK/$client.err"
    rc=$?
    while IFS= read -r line; do
        case $line in
            "ok - "*) n=$((n + 1)); echo "ok $n - $client: ${line#ok - }" ;;
            "not ok - "*) n=$((n + 1)); bad=1; echo "not ok $n - $client: ${line#not ok - }" ;;
        esac
    done <"$WORK/$client.out"
    if [ $rc -ne 0 ] && [ $bad -eq 0 ]; then
        n=$((n + 1)); bad=1
        echo "not ok $n - $client: exited with status $rc"
    fi
    if [ $bad -ne 0 ]; then
        failed=$((failed + 1))
        sed 's/^/# /' "$WORK/$client.out" "$WORK/$client.err"
    fi
}

for client in "${CLIENTS[@]}"; do
    case $client in
        psql) run psql bash "$EX/psql/run.sh" ;;
        python)
            if start_etcd; then
                run python /usr/bin/python3 "$EX/python/fencing_example.py"
            else
                n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - python: etcd did not start"
            fi ;;
        cpp) run cpp bash -c "make -s -C '$EX/cpp' BUILD='$WORK/cpp' && '$WORK/cpp/example'" ;;
        node) run node bash -c "cd '$EX/node' && npm ci --silent --no-audit --no-fund >'$WORK/npm.log' 2>&1 || { cat '$WORK/npm.log'; exit 1; }; node example.js" ;;
        java) run java bash "$EX/java/run.sh" "$WORK/java" ;;
        django) run django /usr/bin/python3 "$EX/django/example.py" ;;
        sqlalchemy) run sqlalchemy /usr/bin/python3 "$EX/sqlalchemy/example.py" ;;
        *) n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - unknown client $client" ;;
    esac
done
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS fencing_examples" >/dev/null
echo "# $n checks, $failed client(s) failed"
[ $failed -eq 0 ]
