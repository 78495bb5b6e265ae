#!/usr/bin/env bash
# The extension on Debian's own binary PostgreSQL packages of a major that the
# host's Debian does not ship: in a chroot of the Debian suite that has it
# (test/matrix/chroot.sh, cached), test/matrix/run.sh MAJOR debian: the build
# with -Wall -Wextra -Werror, pg_regress, the isolation specs, every TAP suite
# (test/t), and the crash scan of every server log. Prints run.sh's
# "ok N - ..." lines.
#
#   test/matrix/debian.sh 17     Debian 13 (trixie)'s postgresql-17
#   test/matrix/debian.sh 19     postgresql-19 from experimental (sid chroot)
#   test/matrix/debian.sh 18     sid's postgresql-18
#   FENCING_MATRIX_PORT          the scratch cluster's port (default 5540MAJOR)
#   FENCING_MATRIX_TAP=0         skip the TAP suites (a quick local run)
set -uo pipefail
MAJOR=${1:?usage: debian.sh 17|18|19}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
case $MAJOR in
17) SUITE=trixie ;;
18 | 19) SUITE=sid ;;
*) echo "not ok 1 - no Debian chroot for PostgreSQL $MAJOR (17, 18 or 19)"; exit 2 ;;
esac
start=$(date +%s)
ROOTFS=$(bash "$ROOT/test/matrix/chroot.sh" "$SUITE") ||
    { echo "not ok 1 - the $SUITE chroot made (test/matrix/chroot.sh)"; exit 1; }
echo "# chroot $ROOTFS ready in $(($(date +%s) - start))s"
# A clean copy of the checkout inside the chroot (tracked and new files).
INSIDE=$(mktemp -d "$ROOTFS/tmp/fencing-src-$MAJOR.XXXXXX")
trap 'rm -rf "$INSIDE"' EXIT
cd "$ROOT" || exit 1
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -co --exclude-standard | tar -cf - -T - | tar -xf - -C "$INSIDE"
else
    tar -cf - --exclude=./build --exclude='*.o' --exclude='*.so' --exclude='*.d' . | tar -xf - -C "$INSIDE"
fi
chmod -R a+rX "$INSIDE"
bash "$ROOT/test/matrix/chroot.sh" "$SUITE" -- env \
    FENCING_MATRIX_PG_CONFIG="/usr/lib/postgresql/$MAJOR/bin/pg_config" \
    ${FENCING_MATRIX_PORT:+FENCING_MATRIX_PORT=$FENCING_MATRIX_PORT} \
    ${FENCING_MATRIX_TAP:+FENCING_MATRIX_TAP=$FENCING_MATRIX_TAP} \
    ${FENCING_TAP_CRASH_CYCLES:+FENCING_TAP_CRASH_CYCLES=$FENCING_TAP_CRASH_CYCLES} \
    bash "${INSIDE#"$ROOTFS"}/test/matrix/run.sh" "$MAJOR" debian
rc=$?
echo "# PostgreSQL $MAJOR (Debian $SUITE): $(($(date +%s) - start))s"
exit $rc
