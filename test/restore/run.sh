#!/usr/bin/env bash
# The restore matrix: fenced tables in every scope, with state outside their
# rows (tombstones, a table HWM, resource HWMs, a tombstone floor and a
# namespace floor; test/restore/source.sql), dumped and restored in every form
# docs/operations.md names, data restored in replica mode as it advises:
#
#   full          pg_dump -Fc, pg_restore -j 4 into an empty database
#   schema+data   pg_dump --schema-only, then --data-only, with psql
#   pg_dumpall    into a second cluster
#   sections      pg_restore --section=pre-data, data, post-data
#   -t inv        into a database that has the extension
#   -n public     with --clean --if-exists, into a database that has the extension
#   -N fencing    into a database that has the extension
#   1.5           -N fencing into a database whose extension is at 1.5, and a full
#                 dump of a database at 1.5 restored where CREATE EXTENSION installs
#                 the default version
#   -j 4          of the partitioned table, 10 runs (5 in replica mode): 0 deadlocks
#
# For each: every restored table is fenced under its policy (token column,
# scope, namespace, on_stale, strict, require_token, guards current), with its
# state where the dump holds it (a stale write against every kind of state is
# refused with TF001), and token-less writes are refused (TF002); or the
# restore fails loudly (pg_restore exits non-zero with an error naming the
# fencing state). A restore that exits 0 with a table unfenced is a failure.
#
# Runs on scratch clusters of its own (FENCING_RESTORE_PGPORT, default
# FENCING_PGPORT + 700, and the port above it) with the installed extension.
# Prints "ok N - ..." lines; exits non-zero on a failure.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
source test/lib/checks.sh
HERE=test/restore

WORK=$(mktemp -d /tmp/fencing-restore.XXXXXX)
chmod 755 "$WORK"
PORT=${FENCING_RESTORE_PGPORT:-$((${FENCING_PGPORT:-54329} + 700))}
cluster() {  # cluster N start|stop|env: the suite's clusters, 0 and 1
    FENCING_PGPORT=$((PORT + $1)) FENCING_CLUSTER_DIR=$WORK/cluster$1 test/cluster.sh "$2"
}
trap 'cluster 0 stop; cluster 1 stop; rm -rf "$WORK"' EXIT
cluster 0 start || exit 1
eval "$(cluster 0 env)"
export PGOPTIONS='-c client_min_messages=warning'
REPLICA='-c client_min_messages=warning -c session_replication_role=replica'

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@" 2>&1; }
fresh() {  # fresh DB [extension version]: an empty database, with the extension if asked
    q -d postgres -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" >/dev/null
    case "${2:-}" in
        "") ;;
        default) q -d "$1" -c "CREATE EXTENSION fencing" >/dev/null ;;
        *) q -d "$1" -c "CREATE EXTENSION fencing VERSION '$2'" >/dev/null ;;
    esac
}

fresh src
q -d src -f $HERE/source.sql >/dev/null || { check "source database set up" ok failed; finish; exit 1; }
ALL=(ev inv jobs led ord)
policy_of() {  # policy_of DB TABLES...: the policies of TABLES, one line each
    local db=$1
    shift
    local list
    list=$(printf "'%s'," "$@")
    q -d "$db" -c "SELECT t, coalesce((SELECT concat_ws('|', token_column, scope, resource_column,
                          resource_namespace, on_stale, strict, require_token, guard_ok)
                     FROM fencing_protected WHERE table_name::text = t), 'NOT FENCED')
                   FROM unnest(ARRAY[${list%,}]) t ORDER BY t" 2>&1
}
# write_state DB TOKEN SQL: the SQLSTATE of SQL written with TOKEN (none: no
# token), "accepted N" when it was (N rows).
write_state() {
    local db=$1 token=$2 sql=$3 out
    if [ "$token" = none ]; then
        out=$(psql -X -q -d "$db" -v VERBOSITY=sqlstate -c "BEGIN" -c "$sql" -c "ROLLBACK" 2>&1)
    else
        out=$(psql -X -q -d "$db" -v VERBOSITY=sqlstate -c "BEGIN" \
            -c "SET LOCAL fencing.token = $token" -c "$sql" -c "ROLLBACK" 2>&1)
    fi
    local state
    state=$(sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\).*/\1/p' <<<"$out" | head -1)
    if [ -n "$state" ]; then echo "$state"; else echo "accepted"; fi
}
SRC_POLICY_ALL=$(policy_of src "${ALL[@]}")

# Writes each kind of state refuses (table, token, SQL, what judges it, needs
# the dumped state).
STALE_WRITES=(
    "inv|35|UPDATE inv SET stock = -1 WHERE id = 1|row 1 at 40|row"
    "inv|35|INSERT INTO inv (id, stock) VALUES (2, -1)|tombstone of key 2 at 40|state"
    "inv|25|INSERT INTO inv (id, stock) VALUES (3, -1)|the table's floor 30|state"
    "led|45|UPDATE led SET amount = -1 WHERE id = 1|table HWM 50|state"
    "ord|45|UPDATE ord SET v = -1 WHERE id = 1|resource s1 at 50|state"
    "ord|35|INSERT INTO ord VALUES (9, 's9', -1)|namespace floor 40|state"
    "ev|15|INSERT INTO ev VALUES (2, 'us', -1)|partition tombstone at 20|state"
    "ev|5|UPDATE ev SET v = -1 WHERE id = 1|partition row at 10|row"
)
# verify FORM DB RC LOG HAS_STATE TABLES...: the restored TABLES are fenced
# under their policies, stale and token-less writes are refused; or the
# restore failed loudly.
verify() {
    local form=$1 db=$2 rc=$3 log=$4 has_state=$5
    shift 5
    local tables=("$@") want got
    want=$(grep -E "^($(
        IFS='|'
        echo "${tables[*]}"
    ))\|" <<<"$SRC_POLICY_ALL")
    got=$(policy_of "$db" "${tables[@]}")
    # Loud: the restore exits non-zero with an error that names a restored table and fencing.
    local names
    names=$(
        IFS='|'
        echo "${tables[*]}"
    )
    if [ "$got" != "$want" ] && [ "$rc" != 0 ] &&
        grep -Ei "ERROR.*\b($names)\b" "$log" | grep -qi fenc; then
        check "$form: the restore fails loudly (exit $rc, an error about fencing)" loud loud
        echo "# $form: $(grep -i -m2 'error' "$log" | tr '\n' ' ' | cut -c1-300)"
        return
    fi
    # Restored without fencing's data: each table comes back under its dumped
    # policy, marked (TF004 for every write, fencing_verify_guards() names it)
    # until its owner accepts the loss; then judged by its policy.
    local marked
    marked=$(q -d "$db" -c "SELECT string_agg(DISTINCT table_name::text, ' ' ORDER BY table_name::text)
                            FROM fencing_verify_guards() WHERE problem LIKE '%restored without its fencing state%'" 2>&1)
    if [ -n "$marked" ]; then
        local all_marked=no
        [ "$marked" = "$(printf '%s\n' "${tables[@]}" | sort | tr '\n' ' ' | sed 's/ $//')" ] && all_marked=yes
        check "$form: every restored table is marked restored without its state (dump without fencing data: $has_state)" \
            "yes no" "$all_marked $has_state"
        local w t col
        for w in "inv stock" "led amount" "ord v" "ev v" "jobs v"; do
            read -r t col <<<"$w"
            [[ " ${tables[*]} " == *" $t "* ]] || continue
            check "$form: a write to $t at a fresh token is refused until the reset" TF004 \
                "$(write_state "$db" 1000 "UPDATE $t SET $col = -1 WHERE id = 1")"
            check "$form: a token-less write to $t is refused until the reset" TF004 \
                "$(write_state "$db" none "UPDATE $t SET $col = -1 WHERE id = 1")"
        done
        if [ "$(q -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'fencing'")" != 1.6 ]; then
            q -d "$db" -c "ALTER EXTENSION fencing UPDATE" >/dev/null
        fi
        for t in $marked; do
            q -d "$db" -c "SELECT fencing_reset_restored('$t')" >/dev/null
        done
        check "$form: each fencing_reset_restored() is logged in fencing.reset_log" \
            "$(wc -w <<<"$marked")" \
            "$(q -d "$db" -c "SELECT count(*) FROM fencing.reset_log WHERE key LIKE 'restored without%'")"
        got=$(policy_of "$db" "${tables[@]}")
    fi
    check "$form: every restored table fenced under its policy, guards current" \
        "$want" "$got"
    # fencing_verify_guards() names exactly the tables that came back without a policy.
    local reported expected_reported
    reported=$(q -d "$db" -c "SELECT string_agg(DISTINCT table_name::text, ' ' ORDER BY table_name::text)
                              FROM fencing_verify_guards()" 2>&1)
    expected_reported=$(sed -n 's/^\([a-z_]*\)|NOT FENCED$/\1/p' <<<"$got" | tr '\n' ' ' | sed 's/ $//')
    check "$form: fencing_verify_guards() reports exactly the tables that came back unfenced" \
        "$expected_reported" "$reported"
    check "$form: pg_restore/psql exits 0 with no error" "0 no error" \
        "$rc $(grep -q 'ERROR\|error:' "$log" && grep -m1 'ERROR\|error:' "$log" | cut -c1-200 || echo no error)"
    local w t token sql what kind
    for w in "${STALE_WRITES[@]}"; do
        IFS='|' read -r t token sql what kind <<<"$w"
        [[ " ${tables[*]} " == *" $t "* ]] || continue
        [ "$kind" = state ] && [ "$has_state" != yes ] && continue
        check "$form: a stale write ($what) is refused" TF001 "$(write_state "$db" "$token" "$sql")"
    done
    local col
    for w in "inv stock" "led amount" "ord v" "ev v"; do
        read -r t col <<<"$w"
        [[ " ${tables[*]} " == *" $t "* ]] || continue
        check "$form: a token-less write to $t is refused" TF002 \
            "$(write_state "$db" none "UPDATE $t SET $col = -1 WHERE id = 1")"
    done
    if [[ " ${tables[*]} " == *" jobs "* ]]; then
        check "$form: jobs (strict, on_stale skip): a write at its HWM is skipped (0 rows)" 0 \
            "$(q -d "$db" -c "BEGIN" -c "SET LOCAL fencing.token = 10" \
                -c "WITH u AS (UPDATE jobs SET v = -1 WHERE id = 1 RETURNING 1) SELECT count(*) FROM u" \
                -c "ROLLBACK")"
    fi
}
# dump_holds_state DUMPFILE: "yes" when the archive holds fencing's state tables' data.
dump_holds_state() {
    pg_restore -l "$1" | grep -q 'TABLE DATA fencing row_tombstone' && echo yes || echo no
}

# ------------------------------------------------------------------ full, -j 4
pg_dump -Fc -d src -f "$WORK/full.dump"
fresh dst
PGOPTIONS=$REPLICA pg_restore -j 4 -d dst "$WORK/full.dump" >"$WORK/full.log" 2>&1
verify "pg_dump -Fc, pg_restore -j 4 (replica)" dst $? "$WORK/full.log" yes "${ALL[@]}"

# ------------------------------------------------------------------ schema then data
pg_dump --schema-only -d src -f "$WORK/schema.sql"
pg_dump --data-only -d src -f "$WORK/data.sql"
fresh dst
{
    psql -X -q -v ON_ERROR_STOP=1 -d dst -f "$WORK/schema.sql" &&
        PGOPTIONS=$REPLICA psql -X -q -v ON_ERROR_STOP=1 -d dst -f "$WORK/data.sql"
} >"$WORK/sd.log" 2>&1
verify "schema then data (psql; data in replica mode)" dst $? "$WORK/sd.log" yes "${ALL[@]}"
check "schema then data: no WARNING names one scope as both the kept and the dumped policy" "" \
    "$(grep -E 'WARNING.*\((row|table|resource) scope\).*\(\1 scope\)' "$WORK/sd.log" | head -1)"

# ------------------------------------------------------------------ pg_dumpall
pg_dumpall -f "$WORK/all.sql"
cluster 1 start
(
    eval "$(cluster 1 env)"
    PGOPTIONS=$REPLICA psql -X -q -d postgres -f "$WORK/all.sql" 2>&1 |
        # The cluster's own role already exists: that one error is expected.
        grep -v 'role "postgres" already exists' >"$WORK/all.log"
    ! grep -q ERROR "$WORK/all.log"
)
rc=$?
(
    eval "$(cluster 1 env)"
    verify "pg_dumpall into a new cluster (replica)" src $rc "$WORK/all.log" yes "${ALL[@]}"
)
cluster 1 stop

# ------------------------------------------------------------------ --section
fresh dst
{
    pg_restore --section=pre-data -d dst "$WORK/full.dump" &&
        PGOPTIONS=$REPLICA pg_restore --section=data -d dst "$WORK/full.dump" &&
        pg_restore --section=post-data -d dst "$WORK/full.dump"
} >"$WORK/sec.log" 2>&1
verify "pg_restore --section pre-data, data (replica), post-data" dst $? "$WORK/sec.log" yes "${ALL[@]}"

# ------------------------------------------------------------------ partial forms
partial() {  # partial FORM DUMP_ARGS RESTORE_ARGS EXTENSION_VERSION TABLES...
    local form=$1 dargs=$2 rargs=$3 version=$4
    shift 4
    # shellcheck disable=SC2086
    pg_dump -Fc $dargs -d src -f "$WORK/part.dump"
    fresh dst "$version"
    # shellcheck disable=SC2086
    PGOPTIONS=$REPLICA pg_restore $rargs -d dst "$WORK/part.dump" >"$WORK/part.log" 2>&1
    local rc=$?
    if [ "$dargs" = "-n public" ] && [ "$rc" = 1 ]; then
        # --clean of schema public: it cannot be dropped (the extension lives
        # in it) nor created again; those two errors are expected, no other.
        check "$form: the only errors are DROP and CREATE of schema public" \
            "cannot drop schema public|schema \"public\" already exists" \
            "$(grep 'ERROR:' "$WORK/part.log" | sed 's/.*ERROR: *//; s/ because.*//' | paste -sd'|')"
        grep -v 'schema public\|schema "public"\|SCHEMA\( IF EXISTS\)\? public;\|errors ignored on restore' \
            "$WORK/part.log" >"$WORK/part.rest.log"
        mv "$WORK/part.rest.log" "$WORK/part.log"
        rc=0
    fi
    verify "$form" dst $rc "$WORK/part.log" "$(dump_holds_state "$WORK/part.dump")" "$@"
}
partial "pg_dump -t inv into a database with the extension (replica)" "-t inv" "" default inv
partial "pg_dump -n public, pg_restore --clean --if-exists (replica)" "-n public" \
    "--clean --if-exists" default inv led ord jobs ev
partial "pg_dump -N fencing into a database with the extension (replica)" "-N fencing" "" \
    default inv led ord jobs ev
partial "pg_dump -N fencing into a database whose extension is at 1.5 (replica)" "-N fencing" "" \
    1.5 inv led ord jobs ev

# A database at 1.5, dumped whole, restored where CREATE EXTENSION installs the
# default version: the 1.5 state lands in the current tables.
fresh src15 1.5
q -d src15 -f $HERE/source.sql >/dev/null
check "a database at 1.5 holds the source state" "1.5 5" \
    "$(q -d src15 -c "SELECT extversion FROM pg_extension WHERE extname = 'fencing'") $(q -d src15 -c "SELECT count(*) FROM fencing_protected")"
pg_dump -Fc -d src15 -f "$WORK/v15.dump"
fresh dst
PGOPTIONS=$REPLICA pg_restore -j 4 -d dst "$WORK/v15.dump" >"$WORK/v15.log" 2>&1
verify "a full dump of 1.5 restored at the default version (replica)" dst $? "$WORK/v15.log" yes "${ALL[@]}"

# ------------------------------------------------------------------ -j 4, partitions
# The partitioned table alone, plus the extension (what the parallel jobs race on).
deadlocks=0
failed_replica=0
silent_loss=0
unfenced=0
SRC_ROWS=$(q -d src -c "SELECT (SELECT count(*) FROM inv) || ' ' || (SELECT count(*) FROM led) || ' ' ||
                               (SELECT count(*) FROM ord) || ' ' || (SELECT count(*) FROM ev)")
for i in 1 2 3 4 5 6 7 8 9 10; do
    fresh dst
    opts=$PGOPTIONS
    [ $i -gt 5 ] && opts=$REPLICA
    PGOPTIONS=$opts pg_restore -j 4 -d dst "$WORK/full.dump" >"$WORK/j4.log" 2>&1
    rc=$?
    d=$(grep -c 'deadlock detected' "$WORK/j4.log")
    # Origin mode is not the documented way: the guards fire on the restored
    # rows and write fencing's tables while their own data is being loaded,
    # so a run may fail (exit 1, a duplicate key, a stale token, or a
    # deadlock with the job loading fencing.protected); what is asserted of
    # it is that no run exits 0 with rows missing or unfenced.
    [ $i -gt 5 ] && deadlocks=$((deadlocks + d))
    [ $i -le 5 ] && [ "$d" -gt 0 ] && echo "# -j 4 run $i (origin mode): $d deadlock(s), a loud failure"
    rows=$(q -d dst -c "SELECT (SELECT count(*) FROM inv) || ' ' || (SELECT count(*) FROM led) || ' ' ||
                               (SELECT count(*) FROM ord) || ' ' || (SELECT count(*) FROM ev)")
    if [ $rc -ne 0 ]; then
        [ $i -gt 5 ] && failed_replica=$((failed_replica + 1))
        echo "# -j 4 run $i ($([ $i -gt 5 ] && echo replica || echo origin) mode) exited $rc, rows $rows" \
            "(source $SRC_ROWS): $(grep -m2 'error' "$WORK/j4.log" | tr '\n' ' ' | cut -c1-300)"
    elif [ "$rows" != "$SRC_ROWS" ]; then
        silent_loss=$((silent_loss + 1))
    fi
    [ "$(policy_of dst ev)" = "$(grep '^ev|' <<<"$SRC_POLICY_ALL")" ] || unfenced=$((unfenced + 1))
done
check "pg_restore -j 4 with a partitioned fenced table, 5 runs in replica mode: deadlocks" \
    0 "$deadlocks"
check "pg_restore -j 4 in replica mode (the documented way), 5 runs: every run exits 0" \
    0 "$failed_replica"
check "pg_restore -j 4, 10 runs: no run exits 0 with rows missing" 0 "$silent_loss"
check "pg_restore -j 4, 10 runs: the partitioned table comes back fenced each time" 0 "$unfenced"
check "pg_restore -j 4 (last run): a stale re-insert of the partition's deleted key is refused" \
    TF001 "$(write_state dst 15 "INSERT INTO ev VALUES (2, 'us', -1)")"

finish
