#!/usr/bin/env bash
# docs/reference.md covers the installed extension: every function and
# aggregate (pg_proc), view (pg_class) and setting (pg_settings 'fencing.%')
# that belongs to the extension (pg_depend deptype 'e') is named in it. Also
# every SQLSTATE the C code raises under its own class (TF…). Runs on its own
# scratch cluster. Prints "ok N - ..." lines.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. test/lib/checks.sh
REF=docs/reference.md

export FENCING_PGPORT=${FENCING_DOCS_PGPORT:-$((${FENCING_PGPORT:-54329} + 200))}
FENCING_CLUSTER_DIR=$(mktemp -d /tmp/fencing-docs.XXXXXX)
rmdir "$FENCING_CLUSTER_DIR"
export FENCING_CLUSTER_DIR
trap 'test/cluster.sh stop' EXIT
test/cluster.sh start
eval "$(test/cluster.sh env)"
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION fencing" >/dev/null

# mentioned NAME: the name appears in the reference as a word of its own
# (schema-qualified or not), e.g. `fencing_acquire` or fencing.guard().
mentioned() {
    grep -qE "(^|[^A-Za-z0-9_.])$(printf '%s' "$1" | sed 's/\./\\./g')([^A-Za-z0-9_]|$)" "$REF"
}
cover() {  # cover KIND QUERY
    local kind=$1 names missing='' count=0
    names=$(psql -X -q -At -c "$2")
    for name in $names; do
        count=$((count + 1))
        mentioned "$name" || missing="$missing $name"
    done
    check "the extension has ${kind}s to document" yes "$([ "$count" -gt 0 ] && echo yes)"
    check "every $kind ($count) is in $REF" "" "$missing"
}

EXT="JOIN pg_catalog.pg_depend d ON d.objid = o.oid AND d.deptype = 'e'
     JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'fencing'"
# A function in the fencing schema is written fencing.name; others bare.
cover function "SELECT DISTINCT CASE WHEN o.pronamespace = 'fencing'::regnamespace
                    THEN 'fencing.' ELSE '' END || o.proname
                FROM pg_catalog.pg_proc o $EXT AND d.classid = 'pg_catalog.pg_proc'::regclass
               ORDER BY 1"
cover view "SELECT o.relname FROM pg_catalog.pg_class o $EXT
               AND d.classid = 'pg_catalog.pg_class'::regclass AND o.relkind IN ('v', 'm')
             ORDER BY 1"
# Custom settings exist once the library is loaded.
cover setting "LOAD 'fencing'; SELECT name FROM pg_catalog.pg_settings WHERE name LIKE 'fencing.%' ORDER BY 1"

# Columns of the public views.
missing=
for col in $(psql -X -At -c "SELECT a.attname FROM pg_catalog.pg_attribute a
        JOIN pg_catalog.pg_class o ON o.oid = a.attrelid $EXT
         AND d.classid = 'pg_catalog.pg_class'::regclass AND o.relkind = 'v'
       WHERE a.attnum > 0 AND NOT a.attisdropped ORDER BY 1"); do
    mentioned "$col" || missing="$missing $col"
done
check "every view column is in $REF" "" "$missing"

# Every function's signature: its argument names appear in the reference.
missing=
while IFS='|' read -r fn args; do
    for a in ${args//,/ }; do
        mentioned "$a" || missing="$missing $fn($a)"
    done
done < <(psql -X -At -c "SELECT o.proname, array_to_string(o.proargnames, ',')
            FROM pg_catalog.pg_proc o $EXT AND d.classid = 'pg_catalog.pg_proc'::regclass
           WHERE o.proargnames IS NOT NULL AND o.pronamespace <> 'fencing'::regnamespace")
check "every named argument of a public function is in $REF" "" "$missing"

# SQLSTATEs of the extension's own class (src/pg/base/errors.hpp) are documented.
missing=
for code in $(sed -n "s/.*MAKE_SQLSTATE('\(.\)', '\(.\)', '\(.\)', '\(.\)', '\(.\)').*/\1\2\3\4\5/p" src/pg/base/errors.hpp); do
    grep -q "\`$code\`" "$REF" || missing="$missing $code"
done
check "every SQLSTATE in src/pg/base/errors.hpp is in $REF" "" "$missing"

# The check itself can fail: a function the reference does not name is found.
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE FUNCTION fencing_undocumented_probe() RETURNS int
    LANGUAGE sql AS 'SELECT 1'; ALTER EXTENSION fencing ADD FUNCTION fencing_undocumented_probe()" >/dev/null
probe=$(psql -X -At -c "SELECT o.proname FROM pg_catalog.pg_proc o $EXT
          AND d.classid = 'pg_catalog.pg_proc'::regclass WHERE o.proname = 'fencing_undocumented_probe'")
check "a function added to the extension is listed by the query" fencing_undocumented_probe "$probe"
check "and is reported as not mentioned" no "$(mentioned "$probe" && echo yes || echo no)"

finish
