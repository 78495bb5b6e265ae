#!/usr/bin/env bash
# Installs, idempotently, the Debian packages of one profile. Nothing is
# installed when everything already is.
#
#   bash test/install-deps.sh [full]   the build, every suite of make test, the
#                                      benchmarks and the examples (make test, make deps)
#   bash test/install-deps.sh demo     only what make demo uses: the build, a
#                                      PostgreSQL 15 server for the scratch cluster,
#                                      and the demo's Python client with its etcd
set -euo pipefail

# make demo (test/demo.sh): builds and installs the extension (make, g++,
# PGXS from postgresql-server-dev-15, which pulls libpq-dev), runs a scratch
# cluster (initdb, pg_ctl: postgresql-15; psql: postgresql-client-15) and
# demo/demo.py under /usr/bin/python3: psycopg 3, a one-member etcd
# (/usr/bin/etcd) and the etcd3 client.
DEMO=(
    make g++
    postgresql-15 postgresql-client-15 postgresql-server-dev-15 libpq-dev
    python3-psycopg etcd-server python3-etcd3
)
# Everything else make test and the other targets use.
FULL_ONLY=(
    clang libclang-rt-14-dev clang-format   # make fuzz (libFuzzer), make format
    libgtest-dev valgrind libipc-run-perl procps
    gdb   # test/races: interleavings forced at a breakpoint in a backend
    gnuplot-nox  # the plots of bench/REPORT.md (make bench)
    python3-yaml
    # clients/go: its deps.sh fetches Go 1.26 and pgx v5 from Debian sid with apt-get download
    # into /var/cache/fencing-go (nothing installed); golang-go only for other Go code
    golang-go
    zookeeper python3-kazoo
    # the Patroni suite (test/patroni): Patroni's etcd3 DCS imports python3-etcd
    patroni python3-etcd
    sqlsmith
    # production surroundings: PgBouncer, pg_repack, pg_partman, asyncpg
    pgbouncer postgresql-15-repack postgresql-15-partman python3-asyncpg
    # the Python client (clients/python): wheel, sdist, venv installs, offline;
    # psycopg_pool (configure=register) and mypy --strict on the examples
    python3-venv python3-pip python3-setuptools python3-wheel python3-psycopg-pool mypy
    # retirement from pg_cron (test/t/082_retire_cron.pl, docs/cookbook.md)
    postgresql-15-cron
    # the client examples (examples/): Django, SQLAlchemy, JDBC; the Java client (clients/java)
    python3-django python3-psycopg2 python3-sqlalchemy
    ruby-activerecord ruby-pg   # test/drivers: ActiveRecord saving fenced rows
    python3-alembic   # test/migrations: Alembic migrations (with Django and ActiveRecord)
    # (also test/pooler/batches: javac against pgjdbc; its pgx program uses clients/go/deps.sh)
    default-jdk-headless libpostgresql-jdbc-java
    # clients/java: Maven, offline from Debian's /usr/share/maven-repo (clients/java/build.sh)
    maven libmaven-compiler-plugin-java libmaven-resources-plugin-java libmaven-jar-plugin-java
    libsurefire-java libmaven-install-plugin-java
    # the Debian package (debian/, test/deb) and the cookbook (docs/cookbook.md)
    git dpkg-dev debhelper fakeroot postgresql-server-dev-all
)

case "${1:-full}" in
    demo) PACKAGES=("${DEMO[@]}") ;;
    full)
        PACKAGES=("${DEMO[@]}" "${FULL_ONLY[@]}")
        # Node.js and npm for examples/node and clients/node, from Debian (nodejs 18, npm 9) unless a
        # node with npm is already installed (another nodejs package, e.g.
        # NodeSource's, ships its own npm and conflicts with Debian's npm package).
        if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
            PACKAGES+=(nodejs npm)
        fi
        ;;
    *) echo "usage: $0 [full|demo]" >&2; exit 2 ;;
esac

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
