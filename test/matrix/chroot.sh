#!/usr/bin/env bash
# A Debian chroot per suite, with Debian's own PostgreSQL binary packages,
# made once with debootstrap and cached. Used by the pg17 and pg19 suites,
# the 18 -> 19 pg_upgrade and the .deb builds for 17, 18 and 19; other tests
# may use it for what only a newer Debian has (PgBouncer 1.24, current drivers).
#
#   test/matrix/chroot.sh SUITE                 make it (if not cached), print its root
#   test/matrix/chroot.sh SUITE -- CMD [ARG...] run CMD as root inside it
#   test/matrix/chroot.sh SUITE --path          print the root, make nothing (exit 1 if absent)
#
#   SUITE  trixie  Debian 13: postgresql-17 and its server-dev package
#          sid     unstable with experimental: postgresql-19/experimental and
#                  sid's postgresql-18 (for 18 -> 19 pg_upgrade and 18 packages)
#
# Cache: $FENCING_CHROOT_CACHE/<suite> (default /var/cache/fencing-chroots),
# reused when its .complete marker names the same recipe (this file's package
# lists); a changed recipe installs what is missing into the cached chroot. A
# lock file serialises makers and users that install. Packages come from the
# Debian archive the host's apt uses (deb.debian.org), nowhere else.
#
# CMD runs in a private mount namespace (unshare -m) with /proc, /dev and
# /dev/shm mounted inside the chroot, so nothing stays mounted when it ends,
# however it ends, and concurrent runs do not share mounts. The network is
# the host's (loopback included): servers in the chroot need ports of their
# own. FENCING_CHROOT_BIND="HOSTDIR:DIR ..." bind-mounts host directories at
# DIR inside the chroot for that run.
set -euo pipefail
SUITE=${1:?usage: chroot.sh trixie|sid [-- CMD...]}
shift
CACHE=${FENCING_CHROOT_CACHE:-/var/cache/fencing-chroots}
MIRROR=http://deb.debian.org/debian
log() { echo "chroot: $*" >&2; }
[ "$(id -u)" = 0 ] || { log "needs root (debootstrap, chroot)"; exit 2; }

# What every chroot has: a C++ toolchain, the TAP framework's Perl modules,
# the Debian packaging tools (pg_buildext is in postgresql-server-dev-all).
COMMON=(build-essential g++ make perl libipc-run-perl libtest-simple-perl dpkg-dev debhelper
    fakeroot postgresql-server-dev-all procps util-linux locales-all python3 python3-psycopg)
case $SUITE in
trixie)
    DIST=trixie
    LISTS="deb $MIRROR trixie main"
    # The Python drivers: the client-python-trixie suite runs pgfencing on them.
    PACKAGES=(postgresql-17 postgresql-client-17 postgresql-server-dev-17 postgresql-17-cron pgbouncer
        python3-asyncpg python3-psycopg-pool python3-sqlalchemy python3-psycopg2)
    EXPERIMENTAL=()
    ;;
sid)
    DIST=sid
    LISTS="deb $MIRROR sid main
deb $MIRROR experimental main"
    PACKAGES=(postgresql-18 postgresql-client-18 postgresql-server-dev-18)
    # Installed together: 19's server needs experimental's libpq5 too.
    EXPERIMENTAL=(postgresql-19 postgresql-client-19 postgresql-server-dev-19 libpq-dev libpq5)
    ;;
*) log "unknown suite $SUITE (trixie or sid)"; exit 2 ;;
esac
ROOTFS=$CACHE/$SUITE
RECIPE=$(printf '%s\n' "$DIST" "$LISTS" "${COMMON[@]}" "${PACKAGES[@]}" "${EXPERIMENTAL[@]}" |
    sha256sum | cut -c1-12)

if [ "${1:-}" = --path ]; then
    [ -f "$ROOTFS/.complete" ] || exit 1
    echo "$ROOTFS"
    exit 0
fi

# in_chroot CMD...: CMD in the chroot, /proc and /dev mounted for its duration only.
in_chroot() {
    local binds=() b
    for b in ${FENCING_CHROOT_BIND:-}; do binds+=("$b"); done
    unshare --mount --propagation private -- bash -euc '
        root=$1; shift
        n=$1; shift
        for ((i = 0; i < n; i++)); do
            src=${1%%:*} dst=${1#*:}; shift
            mkdir -p "$root$dst"
            mount --bind "$src" "$root$dst"
        done
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mkdir -p "$root/dev/shm"
        mountpoint -q "$root/dev/shm" || mount -t tmpfs -o mode=1777 shm "$root/dev/shm"
        exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive "$@"
    ' chroot-run "$ROOTFS" "${#binds[@]}" "${binds[@]}" "$@"
}

apt_in_chroot() {  # the recipe's packages, installed (idempotent)
    in_chroot apt-get -o Acquire::Check-Valid-Until=false -qq update >&2
    in_chroot apt-get install -y -qq --no-install-recommends "${COMMON[@]}" "${PACKAGES[@]}" >&2
    if [ ${#EXPERIMENTAL[@]} -gt 0 ]; then
        local p pins=()
        for p in "${EXPERIMENTAL[@]}"; do pins+=("$p/experimental"); done
        in_chroot apt-get install -y -qq --no-install-recommends "${pins[@]}" >&2
    fi
}

make_chroot() {
    if [ -f "$ROOTFS/.complete" ] && [ "$(cat "$ROOTFS/.complete")" = "$RECIPE" ]; then
        return 0
    fi
    command -v debootstrap >/dev/null ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    if [ ! -f "$ROOTFS/.complete" ]; then
        # Not complete: a previous attempt stopped half way; start over.
        rm -rf "$ROOTFS"
        log "debootstrap --variant=minbase $DIST $ROOTFS ($MIRROR)"
        debootstrap --variant=minbase "$DIST" "$ROOTFS" "$MIRROR" >"$CACHE/$SUITE.debootstrap.log" 2>&1 ||
            { tail -20 "$CACHE/$SUITE.debootstrap.log" >&2; return 1; }
        printf '%s\n' "$LISTS" >"$ROOTFS/etc/apt/sources.list"
        # No daemon starts inside: the tests start their own servers, on their ports.
        printf '#!/bin/sh\nexit 101\n' >"$ROOTFS/usr/sbin/policy-rc.d"
        chmod 755 "$ROOTFS/usr/sbin/policy-rc.d"
        # Debian's postgresql-common would create a "main" cluster per major: none.
        mkdir -p "$ROOTFS/etc/postgresql-common"
        echo 'create_main_cluster = false' >"$ROOTFS/etc/postgresql-common/createcluster.conf"
    fi
    log "installing the $SUITE recipe into $ROOTFS"
    apt_in_chroot
    in_chroot apt-get clean >&2
    echo "$RECIPE" >"$ROOTFS/.complete"
}

mkdir -p "$CACHE"
exec 9>"$CACHE/$SUITE.lock"
flock 9
make_chroot
flock -u 9

if [ "${1:-}" = -- ]; then
    shift
    in_chroot "$@"
else
    echo "$ROOTFS"
fi
