#!/usr/bin/env bash
# Debian 13's pgjdbc (libpostgresql-jdbc-java 42.7) for the Java runs on current
# drivers: fetched once with apt-get download inside the cached trixie chroot
# (test/matrix/chroot.sh trixie, root) and unpacked with dpkg-deb -x under
# build/conformance-java-trixie (reused afterwards). Prints the jar's path.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$ROOT/build/conformance-java-trixie
[ "$(id -u)" = 0 ] || { echo "trixie-pgjdbc.sh: needs root (chroot)" >&2; exit 77; }
"$ROOT/test/matrix/chroot.sh" trixie >/dev/null ||
    { echo "trixie-pgjdbc.sh: the trixie chroot could not be made (test/matrix/chroot.sh trixie)" >&2; exit 1; }
mkdir -p "$OUT"
if ! ls "$OUT"/pkg/usr/share/java/postgresql-4*.jar >/dev/null 2>&1; then
    rm -rf "$OUT"/*.deb "$OUT/pkg"
    FENCING_CHROOT_BIND="$OUT:/mnt/fencing-out" "$ROOT/test/matrix/chroot.sh" trixie -- \
        sh -c 'cd /mnt/fencing-out && apt-get download -qq libpostgresql-jdbc-java' >&2
    dpkg-deb -x "$OUT"/libpostgresql-jdbc-java_*.deb "$OUT/pkg"
fi
ls "$OUT"/pkg/usr/share/java/postgresql-4*.jar | head -1
