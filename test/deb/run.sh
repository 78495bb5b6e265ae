#!/usr/bin/env bash
# The Debian package: build postgresql-15-fencing from a clean copy of the
# tree, install it with apt-get where `make install` did not put the extension,
# CREATE EXTENSION plus a smoke test (a stale write refused with TF001), then
# `dpkg -r` and check that every file it installed is gone.
#
# The package installs into the system PostgreSQL tree (/usr/lib/postgresql/15,
# /usr/share/postgresql/15). Extension files already there that no package owns
# (a `make install`) are moved aside first and put back, byte for byte, at the
# end, whatever happens. Needs root (or sudo). Prints "ok N - ..." lines.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. test/lib/checks.sh

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
PGMAJOR=15
PKG=postgresql-$PGMAJOR-fencing
SYSBIN=/usr/lib/postgresql/$PGMAJOR/bin
PKGLIB=$($SYSBIN/pg_config --pkglibdir)
SHARE=$($SYSBIN/pg_config --sharedir)/extension
CONTROL_VERSION=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" fencing.control)

WORK=$(mktemp -d /tmp/fencing-deb.XXXXXX)
chmod 755 "$WORK"
BACKUP=$WORK/backup
mkdir -p "$BACKUP"
export FENCING_PGPORT=${FENCING_DEB_PGPORT:-$((${FENCING_PGPORT:-54329} + 1000))}
export FENCING_CLUSTER_DIR=$WORK/cluster
# The scratch cluster runs the system binaries, which load the packaged files.
export PATH=$SYSBIN:$PATH
unset PG_CONFIG

# Files of the extension in the system tree, as `make install` would place them.
ext_files() {
    ls -1d "$PKGLIB"/fencing.so "$PKGLIB"/bitcode/fencing* "$SHARE"/fencing.control \
        "$SHARE"/fencing--*.sql 2>/dev/null
}

# dpkg -r, waiting (bounded) while another dpkg or apt-get holds the lock.
dpkg_remove() {
    local tries out
    for tries in $(seq 150 -1 1); do
        out=$($SUDO dpkg -r $PKG 2>&1) && { echo "$out"; return 0; }
        echo "$out"
        case "$out" in *lock*) [ "$tries" -gt 1 ] && sleep 2 ;; *) return 1 ;; esac
    done
    return 1
}

moved=()
restored=
put_back() {  # the make-installed files, as they were
    [ -n "$restored" ] && return
    restored=1
    test/cluster.sh stop >/dev/null 2>&1
    if dpkg-query -W -f='${Status}' $PKG 2>/dev/null | grep -q "install ok installed"; then
        dpkg_remove >/dev/null 2>&1
    fi
    for f in "${moved[@]}"; do
        $SUDO mkdir -p "$(dirname "$f")"
        $SUDO cp -a "$BACKUP$f" "$f"
    done
}
trap 'put_back; rm -rf "$WORK"' EXIT

# 1. Move a make-installed extension aside.
for f in $(ext_files); do
    if ! dpkg -S "$f" >/dev/null 2>&1; then
        $SUDO mkdir -p "$BACKUP$(dirname "$f")"
        $SUDO cp -a "$f" "$BACKUP$f" && $SUDO rm -f "$f" && moved+=("$f")
    fi
done
[ -d "$PKGLIB/bitcode/fencing" ] && ! dpkg -S "$PKGLIB/bitcode/fencing" >/dev/null 2>&1 &&
    $SUDO rm -rf "$PKGLIB/bitcode/fencing"
check "no extension file left in the system tree before the package is installed" "" "$(ext_files)"

# 2. Build the .deb from a clean copy (tracked and new, not ignored, files).
mkdir -p "$WORK/src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -co --exclude-standard | tar -cf - -T - | tar -xf - -C "$WORK/src"
else
    tar -cf - --exclude=./build --exclude='*.o' --exclude='*.so' --exclude='*.d' . |
        tar -xf - -C "$WORK/src"
fi
(cd "$WORK/src" && dpkg-buildpackage -us -uc -b >"$WORK/build.log" 2>&1)
rc=$?
[ $rc -ne 0 ] && tail -40 "$WORK/build.log"
check "dpkg-buildpackage -us -uc -b builds" 0 $rc
DEB=$(ls "$WORK"/${PKG}_*.deb 2>/dev/null | head -1)
check "the .deb is named ${PKG}_<version>-<rev>_<arch>.deb" 1 "$(ls "$WORK"/${PKG}_*.deb 2>/dev/null | wc -l)"

# 3. Install it the way users do.
(cd "$WORK" && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    -o DPkg::Lock::Timeout=300 "./$(basename "$DEB")" \
    >"$WORK/apt.log" 2>&1)
rc=$?
[ $rc -ne 0 ] && tail -20 "$WORK/apt.log"
check "apt-get install ./$(basename "$DEB")" 0 $rc
check "dpkg reports $PKG installed" "install ok installed" \
    "$(dpkg-query -W -f='${Status}' $PKG 2>/dev/null)"
dpkg -L $PKG >"$WORK/files.txt" 2>/dev/null
for f in "$PKGLIB/fencing.so" "$SHARE/fencing.control" "$SHARE/fencing--1.0.sql"; do
    check "$f comes from the package (dpkg -S)" "$PKG" "$(dpkg -S "$f" 2>/dev/null | cut -d: -f1)"
done
unowned=
for f in $(ext_files); do
    dpkg -S "$f" >/dev/null 2>&1 || unowned="$unowned $f"
done
check "every extension file in the system tree is the package's" "" "$unowned"

# 4. A scratch cluster on the system binaries: CREATE EXTENSION and a smoke test.
test/cluster.sh start
eval "$(test/cluster.sh env)"
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION fencing" >/dev/null 2>&1
check "CREATE EXTENSION fencing" "$CONTROL_VERSION" \
    "$(psql -X -At -c "SELECT extversion FROM pg_extension WHERE extname = 'fencing'")"
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('SKU-001', 10, 33);
BEGIN; SET LOCAL fencing.token = 34; UPDATE inventory SET stock = 9 WHERE item = 'SKU-001'; COMMIT;
SQL
check "a write with token 34 is admitted" "9|34" \
    "$(psql -X -At -c "SELECT stock, fence FROM inventory")"
check "a stale write with token 33 is refused with TF001" TF001 \
    "$(sqlstate_of "BEGIN; SET LOCAL fencing.token = 33; UPDATE inventory SET stock = 8 WHERE item = 'SKU-001'; COMMIT;")"
check "fenced_update with the stale token writes 0 rows" 0 \
    "$(psql -X -At -c "SELECT fenced_update('inventory', 33, '{\"item\": \"SKU-001\"}', '{\"stock\": 8}')")"
check "the stock is still the new holder's" 9 "$(psql -X -At -c "SELECT stock FROM inventory")"
test/cluster.sh stop

# 5. dpkg -r removes every file it installed.
dpkg_remove >"$WORK/remove.log" 2>&1
check "dpkg -r $PKG" 0 $?
check "dpkg no longer lists $PKG as installed" "" \
    "$(dpkg-query -W -f='${Status}' $PKG 2>/dev/null | grep 'install ok installed')"
left=
while read -r f; do
    case "$f" in "$PKGLIB"/* | "$SHARE"/* | /usr/share/doc/$PKG/*) ;; *) continue ;; esac
    [ -d "$f" ] && continue
    test -e "$f" && left="$left $f"
done <"$WORK/files.txt"
check "the package listed its library and SQL files" yes "$([ "$(grep -cE "^($PKGLIB/fencing.so|$SHARE/fencing)" "$WORK/files.txt")" -ge 3 ] && echo yes)"
check "no file of the package is left after dpkg -r" "" "$left"
check "no extension file left in the system tree" "" "$(ext_files)"

# 6. Put a make-installed extension back where it was.
put_back
bad=
for f in "${moved[@]}"; do cmp -s "$BACKUP$f" "$f" || bad="$bad $f"; done
check "the ${#moved[@]} make-installed files are back, byte for byte" "" "$bad"

finish
