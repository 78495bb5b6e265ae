#!/usr/bin/env bash
# The Debian package for the majors the host does not ship: pg_buildext builds
# postgresql-N-fencing in the chroot of the Debian suite that has N
# (test/matrix/chroot.sh, cached): 17 in trixie, 18 and 19 in sid (19 from
# experimental). Each package installs with apt-get, CREATE EXTENSION and a
# stale write refused (TF001) on a scratch cluster of that major, then dpkg -r
# leaves none of its files. Prints "ok N - ..." lines and "N passed, N failed".
#
#   test/deb/chroot.sh [MAJOR...]      default: 17 18 19
#   FENCING_DEB_CHROOT_PORT            the scratch clusters' port (default 55450)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MAJORS=${*:-17 18 19}
if [ -z "${FENCING_IN_CHROOT:-}" ]; then
    OUT=$(mktemp)
    trap 'rm -f "$OUT"' EXIT
    for SUITE in trixie sid; do
        want=()
        for m in $MAJORS; do
            case "$SUITE:$m" in trixie:17 | sid:18 | sid:19) want+=("$m") ;; esac
        done
        [ ${#want[@]} -eq 0 ] && continue
        if ! ROOTFS=$(bash "$ROOT/test/matrix/chroot.sh" "$SUITE"); then
            echo "not ok 1 - the $SUITE chroot made (test/matrix/chroot.sh)" | tee -a "$OUT"
            continue
        fi
        INSIDE=$(mktemp -d "$ROOTFS/tmp/fencing-deb-src.XXXXXX")
        (cd "$ROOT" && git ls-files -co --exclude-standard | tar -cf - -T - | tar -xf - -C "$INSIDE")
        chmod -R a+rX "$INSIDE"
        bash "$ROOT/test/matrix/chroot.sh" "$SUITE" -- env FENCING_IN_CHROOT=1 \
            FENCING_DEB_CHROOT_PORT="${FENCING_DEB_CHROOT_PORT:-55450}" \
            bash "${INSIDE#"$ROOTFS"}/test/deb/chroot.sh" "${want[@]}" 2>&1 |
            grep -v 'passed, [0-9]* failed$' | tee -a "$OUT"
        rm -rf "$INSIDE"
    done
    good=$(grep -cE '^ok [0-9]+' "$OUT")
    bad=$(grep -cE '^not ok [0-9]+' "$OUT")
    echo "$good passed, $bad failed"
    [ "$bad" -eq 0 ] && [ "$good" -gt 0 ]
    exit
fi

# Inside the chroot, as root.
source "$ROOT/test/lib/checks.sh"
PORT=${FENCING_DEB_CHROOT_PORT:-55450}
WORK=$(mktemp -d /tmp/fencing-deb.XXXXXX)
chmod 755 "$WORK"
cp -a "$ROOT" "$WORK/src"
# pg_buildext builds for the majors of debian/pgversions that postgresql-common
# supports; experimental's 19 is not among sid's supported ones by default.
# debian/control names the host's majors: regenerated for this suite's.
(cd "$WORK/src" && export PG_SUPPORTED_VERSIONS=installed && pg_buildext updatecontrol &&
    dpkg-buildpackage -us -uc -b) >"$WORK/build.log" 2>&1
rc=$?
[ $rc -ne 0 ] && tail -30 "$WORK/build.log"
check "dpkg-buildpackage builds in $(. /etc/os-release && echo "$PRETTY_NAME")" 0 $rc
for MAJOR in "$@"; do
    PKG=postgresql-$MAJOR-fencing
    BIN=/usr/lib/postgresql/$MAJOR/bin
    DEB=$(ls "$WORK"/${PKG}_*.deb 2>/dev/null | head -1)
    check "$MAJOR: ${PKG}_<version>_<arch>.deb built" yes "$([ -n "$DEB" ] && echo yes)"
    [ -n "$DEB" ] || continue
    (cd "$WORK" && apt-get install -y -qq "./$(basename "$DEB")" >"$WORK/apt-$MAJOR.log" 2>&1)
    check "$MAJOR: apt-get install ./$(basename "$DEB")" 0 $?
    check "$MAJOR: fencing.so comes from the package" "$PKG" \
        "$(dpkg -S "$("$BIN/pg_config" --pkglibdir)/fencing.so" 2>/dev/null | cut -d: -f1)"
    DATA=$WORK/data-$MAJOR SOCK=$WORK/sock-$MAJOR
    mkdir -p "$SOCK"
    chown -R postgres: "$WORK"
    runuser -u postgres -- "$BIN/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
    printf "port = %s\nlisten_addresses = ''\nunix_socket_directories = '%s'\n" "$PORT" "$SOCK" \
        >>"$DATA/postgresql.conf"
    runuser -u postgres -- "$BIN/pg_ctl" -D "$DATA" -l "$WORK/server-$MAJOR.log" -w start >/dev/null
    export PGHOST=$SOCK PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
    check "$MAJOR: CREATE EXTENSION fencing" \
        "$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$ROOT/fencing.control")" \
        "$("$BIN/psql" -X -q -At -c "CREATE EXTENSION fencing" \
            -c "SELECT extversion FROM pg_extension WHERE extname = 'fencing'" 2>&1)"
    "$BIN/psql" -X -q -v ON_ERROR_STOP=1 >/dev/null 2>&1 <<'SQL'
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('SKU-001', 10, 33);
BEGIN; SET LOCAL fencing.token = 34; UPDATE inventory SET stock = 9 WHERE item = 'SKU-001'; COMMIT;
SQL
    check "$MAJOR: a write with token 34 is admitted" "9|34" \
        "$("$BIN/psql" -X -At -c "SELECT stock, fence FROM inventory")"
    check "$MAJOR: a stale write with token 33 is refused with TF001" TF001 \
        "$("$BIN/psql" -X -q -v VERBOSITY=sqlstate -c "BEGIN; SET LOCAL fencing.token = 33; UPDATE inventory SET stock = 8 WHERE item = 'SKU-001'; COMMIT;" 2>&1 |
            sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\).*/\1/p' | head -1)"
    runuser -u postgres -- "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    dpkg -L "$PKG" >"$WORK/files-$MAJOR.txt"
    dpkg -r "$PKG" >"$WORK/remove-$MAJOR.log" 2>&1
    check "$MAJOR: dpkg -r $PKG" 0 $?
    left=
    while read -r f; do
        [ -f "$f" ] && left="$left $f"
    done <"$WORK/files-$MAJOR.txt"
    check "$MAJOR: no file of the package left after dpkg -r" "" "$left"
done
rm -rf "$WORK"
finish
