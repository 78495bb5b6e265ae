#!/usr/bin/env bash
# pg_upgrade from Debian's PostgreSQL 18 (sid) to 19 (experimental), both
# Debian binary packages in the sid chroot (test/matrix/chroot.sh), with
# fencing state in every scope: test/t/040_pg_upgrade.pl with its old cluster
# on 18 (FENCING_UPGRADE_FROM) and its new one on 19, as upgrade.sh runs it
# from 15 to 18. The extension is built with -Werror and installed into both.
# Prints "ok N - ..." lines.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/test/matrix/lib.sh"
if [ -z "${FENCING_IN_CHROOT:-}" ]; then
    ROOTFS=$(bash "$ROOT/test/matrix/chroot.sh" sid) || { echo "not ok 1 - the sid chroot made"; exit 1; }
    INSIDE=$(mktemp -d "$ROOTFS/tmp/fencing-upgrade-src.XXXXXX")
    trap 'rm -rf "$INSIDE"' EXIT
    cd "$ROOT" || exit 1
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files -co --exclude-standard | tar -cf - -T - | tar -xf - -C "$INSIDE"
    else
        tar -cf - --exclude=./build --exclude='*.o' --exclude='*.so' --exclude='*.d' . | tar -xf - -C "$INSIDE"
    fi
    chmod -R a+rX "$INSIDE"
    bash "$ROOT/test/matrix/chroot.sh" sid -- env FENCING_IN_CHROOT=1 \
        bash "${INSIDE#"$ROOTFS"}/test/matrix/upgrade-18-19.sh"
    exit $?
fi
OLD=/usr/lib/postgresql/18/bin/pg_config
NEW=/usr/lib/postgresql/19/bin/pg_config
WORK=$(mktemp -d /tmp/fencing-upgrade.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/18" "$WORK/19"
install_extension "$OLD" "$WORK/18" || { echo "not ok 1 - the extension installed into 18"; exit 1; }
install_extension "$NEW" "$WORK/19" || { echo "not ok 1 - the extension installed into 19"; exit 1; }
echo "ok 1 - the extension built with -Werror and installed into $("$OLD" --version) and $("$NEW" --version)"
cd "$WORK/19" || exit 1
FENCING_UPGRADE_FROM=$(dirname "$("$OLD" --bindir)") PG_CONFIG="$NEW" TESTDIR="$WORK/tap" \
    bash test/t/run.sh test/t/040_pg_upgrade.pl 2>&1 | tee "$WORK/tap.log" | grep -E '^(not )?ok |^# pg_upgrade'
rc=${PIPESTATUS[0]}
[ "$rc" -ne 0 ] && grep -vE '^(not )?ok ' "$WORK/tap.log" | tail -40 | sed 's/^/# /'
exit "$rc"
