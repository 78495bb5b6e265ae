#!/usr/bin/env bash
# Builds a PostgreSQL server from Debian's source package and prints its
# pg_config path. Used by the version matrix (test/matrix/run.sh) and the
# pg_upgrade test; nothing here touches Debian's installed PostgreSQL.
#
#   test/pg/build-server.sh MAJOR FLAVOR
#     MAJOR   15 (bookworm's postgresql-15) or 18 (sid's postgresql-18)
#     FLAVOR  assert    --enable-cassert --enable-debug, -O1
#             valgrind  the same, plus USE_VALGRIND (for memcheck runs)
#             release   -O2 without assertions (for instruction counts)
#
# The build is cached under $FENCING_PG_CACHE (default /var/cache/fencing-pg),
# keyed by the source version, the flavor and a checksum of the recipe (the
# configure arguments and what is installed besides the core), so a second
# run on the same machine costs nothing and a changed recipe rebuilds. A fresh machine builds (about 7 minutes per server on 2 cores).
# The upstream tarball (Debian's .orig) is built, not Debian's patched tree:
# Debian's patches hard-code /usr/lib/postgresql paths into the binaries.
set -euo pipefail
MAJOR=${1:?usage: build-server.sh MAJOR FLAVOR}
FLAVOR=${2:?usage: build-server.sh MAJOR FLAVOR}
CACHE=${FENCING_PG_CACHE:-/var/cache/fencing-pg}
HERE=$(cd "$(dirname "$0")" && pwd)
log() { echo "build-server: $*" >&2; }

case $MAJOR in
15) SUITE=bookworm ;;
18) SUITE=sid ;;
*) log "unsupported major version $MAJOR (15 or 18)"; exit 2 ;;
esac
COMMON_ARGS=(--enable-tap-tests --with-icu --with-openssl)
case $FLAVOR in
assert) FLAVOR_ARGS=(--enable-cassert --enable-debug CFLAGS="-O1 -g") ;;
valgrind) FLAVOR_ARGS=(--enable-cassert --enable-debug CFLAGS="-O1 -g" CPPFLAGS=-DUSE_VALGRIND) ;;
release) FLAVOR_ARGS=(--enable-debug CFLAGS="-O2 -g") ;;
*) log "unknown flavor $FLAVOR (assert, valgrind or release)"; exit 2 ;;
esac
CONTRIB=(citext pg_stat_statements postgres_fdw)

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

# A deb-src entry for the suite that has the source package. Only source
# indexes are added, so no binary package from sid can be installed by it.
ensure_source_index() {
    local list=/etc/apt/sources.list.d/fencing-src-$SUITE.sources
    if [ ! -f "$list" ]; then
        printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
            "$SUITE" | $SUDO tee "$list" >/dev/null
        $SUDO apt-get update -qq >&2
    fi
    if ! apt-cache showsrc "postgresql-$MAJOR" 2>/dev/null | grep -q '^Version:'; then
        $SUDO apt-get update -qq >&2
    fi
}

ensure_source_index
VERSION=$(apt-cache showsrc "postgresql-$MAJOR" | sed -n 's/^Version: //p' | sort -V | tail -1)
UPSTREAM=${VERSION%%-*}
UPSTREAM=${UPSTREAM#*:}
RECIPE=$(printf '%s\n' "${COMMON_ARGS[@]}" "${FLAVOR_ARGS[@]}" isolation perl "${CONTRIB[@]}" |
    sha256sum | cut -c1-12)
PREFIX=$CACHE/$UPSTREAM-$FLAVOR-$RECIPE
if [ -f "$PREFIX/.complete" ]; then
    echo "$PREFIX/bin/pg_config"
    exit 0
fi

log "building PostgreSQL $UPSTREAM ($FLAVOR) into $PREFIX"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -qq bison flex gcc make perl libipc-run-perl libreadline-dev \
    zlib1g-dev libssl-dev libicu-dev pkgconf dpkg-dev >/dev/null

WORK=$CACHE/src/$UPSTREAM
$SUDO mkdir -p "$WORK" "$CACHE"
$SUDO chown "$(id -u)" "$CACHE" "$CACHE/src" "$WORK"
cd "$WORK"
if ! ls ./*.orig.tar.* >/dev/null 2>&1; then
    apt-get source --download-only "postgresql-$MAJOR=$VERSION" >&2
fi
rm -rf "postgresql-$UPSTREAM"
tar xf ./*.orig.tar.*
cd "postgresql-$UPSTREAM"

rm -rf "$PREFIX"
# Called from `make test`, this script inherits the outer make's MAKEFLAGS
# and MAKELEVEL, and PostgreSQL's makefiles then skip building their
# generated headers first (a sub-make expects its parent to have done it).
unset MAKEFLAGS MAKELEVEL MFLAGS
./configure --prefix="$PREFIX" "${COMMON_ARGS[@]}" "${FLAVOR_ARGS[@]}" >configure.log 2>&1 ||
    { tail -30 configure.log >&2; exit 1; }
make -s -j"$(nproc)" >build.log 2>&1 || { tail -40 build.log >&2; exit 1; }
make -s install >>build.log 2>&1
# What the tests use besides the core: the isolation tester, the TAP
# framework's Perl modules (installed under pgxs for PGXS's prove), and the
# contrib modules the suites create.
make -s -C src/test/isolation install >>build.log 2>&1
make -s -C src/test/perl install >>build.log 2>&1
for m in "${CONTRIB[@]}"; do
    make -s -C "contrib/$m" install >>build.log 2>&1
done
# Valgrind's suppressions for PostgreSQL itself, next to the build.
cp src/tools/valgrind.supp "$PREFIX/valgrind.supp"
chmod -R a+rX "$PREFIX"
touch "$PREFIX/.complete"
cd "$CACHE/src" && rm -rf "$WORK/postgresql-$UPSTREAM"
log "built $UPSTREAM ($FLAVOR)"
echo "$PREFIX/bin/pg_config"
