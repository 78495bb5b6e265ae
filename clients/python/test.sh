#!/usr/bin/env bash
# The Python client's suite (test/run-all.sh client-python). Offline:
#   1. builds the wheel (pip wheel --no-build-isolation) and the sdist
#      (setuptools' PEP 517 hook) from a copy of clients/python;
#   2. installs the wheel into a temporary venv that sees Debian's
#      python3-psycopg and python3-asyncpg (--system-site-packages), the sdist
#      into a second one;
#   3. starts its own scratch cluster (test/cluster.sh, as postgres, on
#      CLIENT_PYTHON_PGPORT, default 55440, in a private directory) with the
#      installed extension (make install first);
#   4. runs tests/run_tests.py and example.py from the venv;
#   5. with Debian 12's PgBouncer (1.18) in transaction pooling on
#      CLIENT_PYTHON_PGBOUNCER_PORT (default the cluster's port + 1): named
#      prepared statements run another client's statement, and the library's
#      connections (prepare_threshold=None) do not (tests/pgbouncer_prepared.py).
#      Then Debian 13's PgBouncer 1.24 (test/lib/pgbouncer124.sh, the trixie
#      chroot, as root) on the next port, max_prepared_statements = 200: the
#      driver's defaults and the library's connections both keep their own
#      statements. Behind each, on the cluster restarted with the library
#      preloaded: acquire, renewals, the transaction helper, a stale write's
#      StaleTokenError, a takeover's TF003 as LeaseTakenOverError, no session
#      state left on server connections (tests/pooler_lease.py).
# Prints "ok N - ..." / "not ok N - ..." lines.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3
WORK=$(mktemp -d /tmp/pgfencing-test.XXXXXX)
chmod 755 "$WORK"
export FENCING_PGPORT=${CLIENT_PYTHON_PGPORT:-55440}
export FENCING_CLUSTER_DIR=$WORK/cluster
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
cleanup() {
    "$ROOT/test/cluster.sh" stop || true
    rm -rf "$WORK"
}
trap cleanup EXIT

n=0
check() {  # check DESCRIPTION COMMAND...: one TAP line; the output is kept as comments on failure
    n=$((n + 1))
    local out
    if out=$("${@:2}" 2>&1); then
        echo "ok $n - $1"
    else
        echo "not ok $n - $1"
        printf '%s\n' "$out" | sed 's/^/# /'
    fi
}

# ---- 1. build, offline, from a clean copy (no build/ or egg-info in the tree)
mkdir -p "$WORK/src" "$WORK/dist"
cp -r "$HERE/pyproject.toml" "$HERE/README.md" "$HERE/LICENSE" "$HERE/src" "$WORK/src/"
find "$WORK/src" -name __pycache__ -prune -exec rm -rf {} +
check "wheel built offline (pip wheel --no-deps --no-build-isolation)" \
    $PY -m pip wheel --no-deps --no-build-isolation --no-index -q -w "$WORK/dist" "$WORK/src"
check "sdist built offline (setuptools.build_meta.build_sdist)" \
    bash -c "cd '$WORK/src' && $PY -c 'import sys; from setuptools import build_meta as b; b.build_sdist(sys.argv[1])' '$WORK/dist' >/dev/null"
WHEEL=$(ls "$WORK"/dist/fencing-*.whl 2>/dev/null | head -1)
SDIST=$(ls "$WORK"/dist/fencing-*.tar.gz 2>/dev/null | head -1)
check "the wheel holds the package and its metadata ($(basename "${WHEEL:-none}"))" $PY - "$WHEEL" <<'PY'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
need = {"pgfencing/__init__.py", "pgfencing/errors.py", "pgfencing/psycopg.py", "pgfencing/asyncpg.py",
        "pgfencing/aio.py", "pgfencing/_lease.py", "pgfencing/_sql.py"}
missing = need - names
meta = [n for n in names if n.endswith(".dist-info/METADATA")]
assert not missing and meta, (missing, meta)
PY
check "the wheel carries LICENSE (PostgreSQL License) and py.typed" $PY - "$WHEEL" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
lic = [n for n in names if n.endswith(".dist-info/LICENSE")]
assert "pgfencing/py.typed" in names, sorted(names)
assert lic and z.read(lic[0]).startswith(b"PostgreSQL License"), sorted(names)
PY

# ---- 2. install into throwaway venvs (no network: PIP_NO_INDEX)
check "wheel installs into a venv" bash -c "$PY -m venv --system-site-packages '$WORK/venv' &&
    '$WORK/venv/bin/pip' install -q --no-deps '$WHEEL'"
check "sdist installs into a second venv" bash -c "$PY -m venv --system-site-packages '$WORK/venv2' &&
    '$WORK/venv2/bin/pip' install -q --no-deps --no-build-isolation '$SDIST' &&
    cd / && '$WORK/venv2/bin/python' -c 'import pgfencing.psycopg, pgfencing.asyncpg'"
VPY=$WORK/venv/bin/python
check "the venv imports pgfencing from the installed wheel" bash -c "cd / && '$VPY' -c '
import pgfencing, pgfencing.psycopg, pgfencing.asyncpg
assert pgfencing.__file__.startswith(\"$WORK/venv/\"), pgfencing.__file__'"

# mypy --strict: the example against the installed wheel (its py.typed), and
# the library's own sources.
if command -v mypy >/dev/null; then
    check "mypy --strict: example.py against the installed wheel (py.typed honoured)" \
        bash -c "cd '$WORK' && mypy --strict --no-incremental --python-executable '$VPY' '$HERE/example.py'"
    check "mypy --strict: example.py with the library's sources (pgfencing itself strict-clean)" \
        bash -c "cd '$WORK' && MYPYPATH='$HERE/src' mypy --strict --no-incremental '$HERE/example.py'"
else
    echo "not ok $((n += 1)) - mypy --strict on the examples: mypy is not installed (apt-get install mypy)"
fi

# ---- 3. the scratch cluster
"$ROOT/test/cluster.sh" start
eval "$("$ROOT/test/cluster.sh" env)"
check "CREATE EXTENSION fencing on the scratch cluster" psql -qAtX -v ON_ERROR_STOP=1 -c "CREATE EXTENSION fencing"

# ---- 4. the example, then the tests (numbered on from here)
cd "$WORK"
check "example.py runs against the cluster" "$VPY" "$HERE/example.py"
# fencing_acquire_all()/fencing_check() are tested whenever this tree's
# update script defines them (then their absence is a failure).
if grep -q 'fencing_acquire_all' "$ROOT/sql/fencing--1.4--1.5.sql"; then export REQUIRE_LEASES_1_5=1; fi
status=0
TAP_OFFSET=$n "$VPY" "$HERE/tests/run_tests.py" | tee "$WORK/run_tests.out" || status=1
n=$((n + $(grep -cE '^(not )?ok ' "$WORK/run_tests.out")))

# The pooler runs below with the library preloaded, so a takeover is TF003.
psql -qAtX -c "ALTER SYSTEM SET shared_preload_libraries = 'fencing'"
if [ "$(id -u)" = 0 ]; then PG_RUN="runuser -u postgres --"; else PG_RUN=; fi
$PG_RUN "$(pg_config --bindir)/pg_ctl" -D "$FENCING_CLUSTER_DIR/data" -l "$FENCING_CLUSTER_DIR/server.log" -w restart >/dev/null
check "the cluster restarted with shared_preload_libraries = fencing" \
    test "$(psql -qAtX -c 'SHOW shared_preload_libraries')" = fencing
# pooler_lease LABEL PORT: the lease path through a pooler (tests/pooler_lease.py)
pooler_lease() {
    TAP_OFFSET=$n "$VPY" "$HERE/tests/pooler_lease.py" "host=127.0.0.1 port=$2 user=postgres dbname=pgb_lib" \
        "host=$PGHOST port=$PGPORT user=postgres dbname=postgres" "$1" | tee "$WORK/lease-$2.out" || status=1
    n=$((n + $(grep -cE '^(not )?ok ' "$WORK/lease-$2.out")))
}

# ---- 5. PgBouncer (Debian's, < 1.21) in transaction pooling: named prepared
# statements run another client's statement; the library's connections do not.
PGB_PORT=${CLIENT_PYTHON_PGBOUNCER_PORT:-$((FENCING_PGPORT + 1))}
if command -v pgbouncer >/dev/null; then
    PGB=$WORK/pgbouncer
    mkdir -p "$PGB"
    cat >"$PGB/pgbouncer.ini" <<INI
[databases]
pgb_named = host=127.0.0.1 port=$FENCING_PGPORT dbname=postgres
pgb_lib = host=127.0.0.1 port=$FENCING_PGPORT dbname=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir =
auth_type = trust
auth_file = $PGB/users.txt
pool_mode = transaction
default_pool_size = 2
max_client_conn = 50
logfile = $PGB/pgbouncer.log
pidfile = $PGB/pgbouncer.pid
INI
    echo '"postgres" ""' >"$PGB/users.txt"
    if [ "$(id -u)" = 0 ]; then chown -R postgres "$PGB"; PGB_RUN="runuser -u postgres --"; else PGB_RUN=; fi
    $PGB_RUN pgbouncer -d "$PGB/pgbouncer.ini" && sleep 1
    TAP_OFFSET=$n "$VPY" "$HERE/tests/pgbouncer_prepared.py" "$PGB_PORT" \
        "host=$PGHOST port=$PGPORT user=postgres dbname=postgres" | sed "s/^\(not \)\{0,1\}ok [0-9]* - /&pgbouncer $(pgbouncer --version | head -1 | cut -d' ' -f2): /" | tee "$WORK/pgb118.out" || status=1
    n=$((n + $(grep -cE '^(not )?ok ' "$WORK/pgb118.out")))
    pooler_lease "pgbouncer $(pgbouncer --version | head -1 | cut -d' ' -f2)" "$PGB_PORT"
    [ -f "$PGB/pgbouncer.pid" ] && kill "$(cat "$PGB/pgbouncer.pid")" 2>/dev/null
fi
# Debian 13's PgBouncer 1.24 (max_prepared_statements = 200) from the trixie
# chroot: psycopg's defaults (named statements after 5 runs) are safe there.
if "$ROOT/test/lib/pgbouncer124.sh" available; then
    PGB124=$WORK/pgbouncer124
    trap '"$ROOT/test/lib/pgbouncer124.sh" stop "$PGB124"; cleanup' EXIT
    if PGBOUNCER124_DATABASES="pgb_named:postgres pgb_lib:postgres" \
        "$ROOT/test/lib/pgbouncer124.sh" start "$PGB124" "$((PGB_PORT + 1))" "$FENCING_PGPORT" transaction 2; then
        TAP_OFFSET=$n "$VPY" "$HERE/tests/pgbouncer_prepared.py" "$((PGB_PORT + 1))" \
            "host=$PGHOST port=$PGPORT user=postgres dbname=postgres" tracks-prepared |
            sed "s/^\(not \)\{0,1\}ok [0-9]* - /&pgbouncer 1.24: /" | tee "$WORK/pgb124.out" || status=1
        n=$((n + $(grep -cE '^(not )?ok ' "$WORK/pgb124.out")))
        pooler_lease "pgbouncer 1.24" "$((PGB_PORT + 1))"
    else
        check "PgBouncer 1.24 starts" false
    fi
    "$ROOT/test/lib/pgbouncer124.sh" stop "$PGB124"
fi
exit $status
