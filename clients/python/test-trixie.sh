#!/usr/bin/env bash
# The Python client's tests (tests/run_tests.py: every flavor, the contract and
# takeover cases) on Debian 13's drivers: run by the trixie chroot's python3
# with its psycopg 3.2, psycopg_pool, asyncpg, SQLAlchemy and psycopg2
# (test/matrix/chroot.sh trixie, made and cached when missing; root), on
# pgfencing from this tree (PYTHONPATH), against a scratch cluster of its own
# (test/cluster.sh on CLIENT_PYTHON_TRIXIE_PGPORT, default 55436) whose socket
# directory is bind-mounted into the chroot. Packaging (wheel, sdist, mypy) and
# the pooler runs stay with test.sh on the host's drivers.
# Prints "ok N - ..." / "not ok N - ..." lines (test/run-all.sh client-python-trixie).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CHROOT=$ROOT/test/matrix/chroot.sh
[ "$(id -u)" = 0 ] || { echo "not ok 1 - the trixie chroot needs root"; exit 1; }
"$CHROOT" trixie >/dev/null || { echo "not ok 1 - the trixie chroot (test/matrix/chroot.sh trixie)"; exit 1; }
export FENCING_PGPORT=${CLIENT_PYTHON_TRIXIE_PGPORT:-55436}
WORK=$(mktemp -d /tmp/pgfencing-trixie.XXXXXX)
chmod 755 "$WORK"
export FENCING_CLUSTER_DIR=$WORK/cluster
trap '"$ROOT/test/cluster.sh" stop || true; rm -rf "$WORK"' EXIT
"$ROOT/test/cluster.sh" start >/dev/null
eval "$("$ROOT/test/cluster.sh" env)"
psql -qAtX -v ON_ERROR_STOP=1 -c "CREATE EXTENSION fencing" >/dev/null
in_trixie() {  # in_trixie CMD...: in the chroot, the clients tree and the socket directory mounted
    FENCING_CHROOT_BIND="$ROOT/clients:/mnt/fencing-clients $PGHOST:/mnt/fencing-sock" "$CHROOT" trixie -- \
        env PGHOST=/mnt/fencing-sock PGPORT="$PGPORT" PGUSER="${PGUSER:-postgres}" PGDATABASE="${PGDATABASE:-postgres}" \
        PYTHONPATH=/mnt/fencing-clients/python/src PYTHONDONTWRITEBYTECODE=1 "$@"
}
versions=$(in_trixie python3 -c 'import psycopg, psycopg_pool, asyncpg, sqlalchemy, psycopg2, sys
print(f"python {sys.version.split()[0]}, psycopg {psycopg.__version__}, psycopg_pool {psycopg_pool.__version__}, "
      f"asyncpg {asyncpg.__version__}, SQLAlchemy {sqlalchemy.__version__}, psycopg2 {psycopg2.__version__.split()[0]}")')
case $versions in
*"psycopg 3.2"*) echo "ok 1 - Debian 13's drivers in the trixie chroot: $versions" ;;
*) echo "not ok 1 - Debian 13's drivers in the trixie chroot (psycopg 3.2 wanted): $versions"; exit 1 ;;
esac
if grep -q 'fencing_acquire_all' "$ROOT/sql/fencing--1.4--1.5.sql"; then REQ=1; else REQ=; fi
in_trixie env TAP_OFFSET=1 REQUIRE_LEASES_1_5=$REQ python3 -u /mnt/fencing-clients/python/tests/run_tests.py
