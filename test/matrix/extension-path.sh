#!/usr/bin/env bash
# The PostgreSQL 18+ way to install an extension outside the server's tree,
# as CloudNativePG's image volumes do: the extension in a directory of its
# own (DIR/share/extension/fencing.control and scripts, DIR/lib/fencing.so),
# none of it in the server's tree, loaded through extension_control_path and
# dynamic_library_path. CREATE EXTENSION, a stale write refused, the module
# listed by pg_get_loaded_modules(). Runs on Debian's 18 and 19 in the sid
# chroot (test/matrix/chroot.sh). Prints "ok N - ..." lines.
#
#   test/matrix/extension-path.sh [MAJOR...]     default: 18 19
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${FENCING_IN_CHROOT:-}" ]; then
    ROOTFS=$(bash "$ROOT/test/matrix/chroot.sh" sid) || { echo "not ok 1 - the sid chroot made"; exit 1; }
    INSIDE=$(mktemp -d "$ROOTFS/tmp/fencing-extpath-src.XXXXXX")
    trap 'rm -rf "$INSIDE"' EXIT
    cd "$ROOT" || exit 1
    git ls-files -co --exclude-standard | tar -cf - -T - | tar -xf - -C "$INSIDE"
    chmod -R a+rX "$INSIDE"
    bash "$ROOT/test/matrix/chroot.sh" sid -- env FENCING_IN_CHROOT=1 \
        bash "${INSIDE#"$ROOTFS"}/test/matrix/extension-path.sh" "${@:-18 19}"
    exit $?
fi
source "$ROOT/test/lib/checks.sh"
PORT=${FENCING_EXTPATH_PORT:-55438}
for MAJOR in ${@:-18 19}; do
    PG_CONFIG=/usr/lib/postgresql/$MAJOR/bin/pg_config
    BIN=$("$PG_CONFIG" --bindir)
    WORK=$(mktemp -d /tmp/fencing-extpath-$MAJOR.XXXXXX)
    chmod 755 "$WORK"
    cp -a "$ROOT" "$WORK/src"
    (cd "$WORK/src" && make -s clean >/dev/null 2>&1; make -s PG_CONFIG="$PG_CONFIG" WERROR=-Werror >build.log 2>&1 &&
        make -s PG_CONFIG="$PG_CONFIG" install DESTDIR="$WORK/stage" >>build.log 2>&1)
    check "$MAJOR: built with -Werror and staged with make install DESTDIR" 0 $?
    # The image-volume layout: one directory for the extension, nothing in the server's tree.
    EXT=$WORK/extensions/fencing
    mkdir -p "$EXT/share" "$EXT/lib"
    cp -a "$WORK/stage$("$PG_CONFIG" --sharedir)/extension" "$EXT/share/"
    cp -a "$WORK/stage$("$PG_CONFIG" --pkglibdir)/fencing.so" "$EXT/lib/"
    rm -f "$("$PG_CONFIG" --sharedir)"/extension/fencing* "$("$PG_CONFIG" --pkglibdir)/fencing.so"
    check "$MAJOR: no fencing file in the server's tree" "" \
        "$(ls "$("$PG_CONFIG" --sharedir)"/extension/fencing* "$("$PG_CONFIG" --pkglibdir)/fencing.so" 2>/dev/null)"
    chown -R postgres: "$WORK"
    DATA=$WORK/data SOCK=$WORK/sock
    runuser -u postgres -- mkdir -p "$SOCK"
    runuser -u postgres -- "$BIN/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
    cat >>"$DATA/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$SOCK'
extension_control_path = '\$system:$EXT/share'
dynamic_library_path = '\$libdir:$EXT/lib'
CONF
    runuser -u postgres -- "$BIN/pg_ctl" -D "$DATA" -l "$WORK/server.log" -w start >/dev/null
    export PGHOST=$SOCK PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres PATH=$BIN:$PATH
    out=$(psql -X -q -v ON_ERROR_STOP=1 -At -c "CREATE EXTENSION fencing" -c "SELECT extversion FROM pg_extension WHERE extname = 'fencing'" 2>&1)
    check "$MAJOR: CREATE EXTENSION fencing from $EXT" "$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$ROOT/fencing.control")" "$out"
    psql -X -q -v ON_ERROR_STOP=1 >/dev/null 2>&1 <<'SQL'
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('SKU-001', 10, 33);
BEGIN; SET LOCAL fencing.token = 34; UPDATE inventory SET stock = 9 WHERE item = 'SKU-001'; COMMIT;
SQL
    check "$MAJOR: a write with token 34 is admitted" "9|34" "$(psql -X -At -c "SELECT stock, fence FROM inventory")"
    check "$MAJOR: a stale write with token 33 is refused with TF001" TF001 \
        "$(sqlstate_of "BEGIN; SET LOCAL fencing.token = 33; UPDATE inventory SET stock = 8 WHERE item = 'SKU-001'; COMMIT;")"
    check "$MAJOR: the module is loaded and named with its version (PG_MODULE_MAGIC_EXT)" "fencing|t" \
        "$(psql -X -At -c "SELECT '7'::fencing_token" -c "SELECT module_name, version IS NOT NULL FROM pg_get_loaded_modules() WHERE module_name = 'fencing'" 2>&1 | tail -1)"
    runuser -u postgres -- "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    rm -rf "$WORK"
done
finish
