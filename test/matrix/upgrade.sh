#!/usr/bin/env bash
# pg_upgrade from a source-built PostgreSQL 15 to 18, with fencing state in
# every scope: test/t/040_pg_upgrade.pl with its old cluster on 15
# (FENCING_UPGRADE_FROM) and its new one on 18. Debian's own 15 binary cannot
# be the old side: it stamps every column with an attribute option
# (pg_attver) that upstream 18 rejects, for fenced and plain tables alike.
# Prints "ok N - ..." lines.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/test/matrix/lib.sh"
OLD=$(bash "$ROOT/test/pg/build-server.sh" 15 assert) || { echo "not ok 1 - PostgreSQL 15 built"; exit 1; }
NEW=$(bash "$ROOT/test/pg/build-server.sh" 18 assert) || { echo "not ok 1 - PostgreSQL 18 built"; exit 1; }
WORK=$(mktemp -d /tmp/fencing-upgrade.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/15" "$WORK/18"
install_extension "$OLD" "$WORK/15" || { echo "not ok 1 - the extension installed into 15"; exit 1; }
install_extension "$NEW" "$WORK/18" || { echo "not ok 1 - the extension installed into 18"; exit 1; }
echo "ok 1 - the extension built and installed into $("$OLD" --version) and $("$NEW" --version)"
cd "$WORK/18" || exit 1
FENCING_UPGRADE_FROM=$(dirname "$("$OLD" --bindir)") PG_CONFIG="$NEW" TESTDIR="$WORK/tap" \
    bash test/t/run.sh test/t/040_pg_upgrade.pl 2>&1 | tee "$WORK/tap.log" | grep -E '^(not )?ok |^# pg_upgrade'
rc=${PIPESTATUS[0]}
[ "$rc" -ne 0 ] && grep -vE '^(not )?ok ' "$WORK/tap.log" | tail -40 | sed 's/^/# /'
exit "$rc"
