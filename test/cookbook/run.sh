#!/usr/bin/env bash
# Runs every recipe of docs/cookbook.md, as written there, and compares its
# output with test/cookbook/expected/<recipe>.out (as pg_regress does).
#
# The code blocks tagged ```sql recipe=NAME / ```python recipe=NAME are
# extracted (test/cookbook/extract.py) and run, each recipe in a database of
# its own on a scratch cluster: SQL with psql -a (echoing every statement, with
# errors and their SQLSTATEs inline), Python with /usr/bin/python3 and the libpq environment; a
# recipe tagged needs=etcd|zookeeper gets a scratch lock service on loopback.
# COOKBOOK_ACCEPT=1 writes the outputs as the new expected files (review them).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)
. test/lib/checks.sh
DOC=docs/cookbook.md
EXP=test/cookbook/expected

WORK=$(mktemp -d /tmp/fencing-cookbook.XXXXXX)
chmod 755 "$WORK"
export FENCING_PGPORT=${FENCING_COOKBOOK_PGPORT:-$((${FENCING_PGPORT:-54329} + 300))}
export FENCING_CLUSTER_DIR=$WORK/cluster
trap 'test/cluster.sh stop; rm -rf "$WORK"' EXIT
test/cluster.sh start
eval "$(test/cluster.sh env)"

/usr/bin/python3 test/cookbook/extract.py "$DOC" "$WORK" >"$WORK/recipes.txt"
check "the cookbook's code blocks extract" 0 $?
for want in inventory job-queue job-queue-retire shard-ownership orm-sqlalchemy tokens-etcd tokens-zookeeper leader-election; do
    check "the cookbook has the $want recipe" yes \
        "$(grep -q "^$want " "$WORK/recipes.txt" && echo yes || echo no)"
done
shopt -s nullglob
for f in "$EXP"/*.out; do
    r=$(basename "$f" .out)
    check "expected/$r.out belongs to a recipe" yes "$(grep -q "^$r " "$WORK/recipes.txt" && echo yes || echo no)"
done

while read -r name lang needs; do
    db=cookbook_${name//-/_}
    psql -X -q -d postgres -c "CREATE DATABASE $db" >/dev/null
    out=$WORK/$name.out
    if [ "$lang" = sql ]; then
        cmd=(psql -X -a -q -v VERBOSITY=verbose -d "$db" -f "$WORK/$name.sql")
    else
        cmd=(/usr/bin/python3 "$WORK/$name.py")
    fi
    if [ "$needs" != - ]; then
        cmd=(/usr/bin/python3 "$ROOT/test/cookbook/services.py" "$needs" -- "${cmd[@]}")
    fi
    (cd "$WORK" && PGDATABASE=$db timeout 120 "${cmd[@]}") >"$out" 2>&1
    rc=$?
    # Error lines name the script by its path: keep only its name. SQLSTATEs
    # are shown (VERBOSITY=verbose), source locations are not.
    sed -i -e "s|$WORK/||g" -e '/^LOCATION: /d' "$out"
    if [ -n "${COOKBOOK_ACCEPT:-}" ]; then cp "$out" "$EXP/$name.out"; fi
    if [ "$lang" = py ]; then
        check "recipe $name runs to the end" 0 $rc
    fi
    if diff -u "$EXP/$name.out" "$out" >"$WORK/$name.diff" 2>&1; then
        check "recipe $name prints what the cookbook shows" same same
    else
        cat "$WORK/$name.diff"
        check "recipe $name prints what the cookbook shows" same different
    fi
done <"$WORK/recipes.txt"

finish
