#!/usr/bin/env bash
# Installs, idempotently, every Debian package the build, the tests and the demo
# need. Nothing is installed when everything already is.
set -euo pipefail

PACKAGES=(
    make g++ clang libclang-rt-14-dev clang-format
    postgresql-15 postgresql-client-15 postgresql-server-dev-15 libpq-dev
    libgtest-dev valgrind libipc-run-perl procps
    gnuplot-nox  # the plots of bench/REPORT.md (make bench)
    python3-psycopg python3-yaml
    etcd-server python3-etcd3 zookeeper python3-kazoo
    # the Patroni suite (test/patroni): Patroni's etcd3 DCS imports python3-etcd
    patroni python3-etcd
    sqlsmith
    # production surroundings: PgBouncer, pg_repack, pg_partman, asyncpg
    pgbouncer postgresql-15-repack postgresql-15-partman python3-asyncpg
    # the client examples (examples/): Django, SQLAlchemy, JDBC
    python3-django python3-psycopg2 python3-sqlalchemy
    default-jdk-headless libpostgresql-jdbc-java
    # the Debian package (debian/, test/deb) and the cookbook (docs/cookbook.md)
    git dpkg-dev debhelper fakeroot postgresql-server-dev-all
)
# Node.js and npm for examples/node, from Debian (nodejs 18, npm 9) unless a
# node with npm is already installed (another nodejs package, e.g.
# NodeSource's, ships its own npm and conflicts with Debian's npm package).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    PACKAGES+=(nodejs npm)
fi

missing=()
for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing: ${missing[*]}"
# A registry hiccup should not fail a run: three tries, a pause between.
for attempt in 1 2 3; do
    if $SUDO apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >/dev/null; then
        exit 0
    fi
    echo "apt-get failed (attempt $attempt of 3)" >&2
    sleep 10
done
exit 1
