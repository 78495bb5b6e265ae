#!/usr/bin/env bash
# The extension installs, updates and fences in a database of every server
# encoding PostgreSQL supports.
#
# A static check first: every sql/fencing--*.sql script (and fencing.control)
# is pure ASCII. PostgreSQL reads an extension script in the database's
# encoding when the control file names none, so one UTF-8 byte in a comment
# is an "invalid byte sequence" in an EUC_JP, EUC_KR or EUC_CN database.
# (fencing.control names no encoding on purpose: with "encoding = UTF8" the
# scripts are converted from UTF8, and PostgreSQL has no UTF8 to
# MULE_INTERNAL conversion, so CREATE EXTENSION would fail there.)
#
# Then, on a scratch cluster of its own (private port and socket, run as the
# postgres user under root), for each encoding the server accepts for a
# database (every name pg_encoding_to_char() knows is tried; the client-only
# ones must be refused as such): a database from template0 with LC_COLLATE and
# LC_CTYPE 'C', and in it
#   - CREATE EXTENSION fencing (the default version), a fenced write and a
#     stale one refused (TF001, also through fenced_update());
#   - DROP EXTENSION, CREATE EXTENSION fencing VERSION '1.0' with a tombstone
#     in place, ALTER EXTENSION fencing UPDATE through every script to the
#     default version, the tombstone still refusing a stale re-insert, and the
#     same smoke test.
# The client speaks the database's own encoding (every server encoding is a
# client encoding; the test's SQL is ASCII).
#
# Prints "ok N - ..." lines; exits non-zero on any failure. Needs the
# extension installed (make install) for the pg_config on PATH.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
source test/lib/checks.sh

# ------------------------------------------------------------ static check
for f in sql/fencing--*.sql fencing.control; do
    bad=$(LC_ALL=C grep -n '[^[:print:][:space:]]' "$f" | head -3 | cut -c1-80)
    check "$f is pure ASCII" "" "$bad"
done

# ------------------------------------------------------------ scratch cluster
export FENCING_PGPORT=${ENCODINGS_PGPORT:-54347}
export FENCING_CLUSTER_DIR=/tmp/fencing-encodings-$FENCING_PGPORT
test/cluster.sh stop
trap 'test/cluster.sh stop' EXIT
test/cluster.sh start || { check "scratch cluster starts" "0" "$?"; finish; exit 1; }
eval "$(test/cluster.sh env)"
unset PGCLIENTENCODING PGOPTIONS

current=$(sed -n "s/^default_version = '\(.*\)'/\1/p" fencing.control)
path=$(psql -X -At -c "SELECT path FROM pg_extension_update_paths('fencing')
                       WHERE source = '1.0' AND target = '$current'")
steps=$(ls sql/fencing--*--*.sql | wc -l)
check "one update path from 1.0 to $current through every update script ($steps)" \
    "$steps" "$(echo "$path" | grep -o -- '--' | wc -l)"

# Every encoding name the server knows; CREATE DATABASE decides which are
# server encodings.
names=$(psql -X -At -c "SELECT pg_encoding_to_char(i) FROM generate_series(0, 255) i
                        WHERE pg_encoding_to_char(i) <> '' ORDER BY i")
server=()
client_only=()
for enc in $names; do
    db="fencing_enc_$(echo "$enc" | tr 'A-Z' 'a-z')"
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
    out=$(psql -X -q -v VERBOSITY=verbose -d postgres -c "CREATE DATABASE $db TEMPLATE template0
            ENCODING '$enc' LC_COLLATE 'C' LC_CTYPE 'C'" 2>&1)
    # createdb() looks the name up among server encodings only: a client-only
    # encoding is "not a valid encoding name" (42704) there.
    if [ -z "$out" ]; then
        server+=("$enc")
    elif echo "$out" | grep -q "ERROR:  42704: $enc is not a valid encoding name"; then
        client_only+=("$enc")
    else
        check "CREATE DATABASE with encoding $enc" "" "$out"
    fi
done
echo "# server encodings (${#server[@]}): ${server[*]}"
echo "# client-only encodings (${#client_only[@]}): ${client_only[*]}"
check "the encodings refused are client-only ones (SJIS, BIG5, GBK, UHC, GB18030, JOHAB, ...)" "" \
    "$(printf '%s\n' "${client_only[@]}" | grep -vxE 'SJIS|BIG5|GBK|UHC|GB18030|JOHAB|SHIFT_JIS_2004')"
check "UTF8, SQL_ASCII, EUC_JP, EUC_KR, EUC_CN and LATIN1 are among the server encodings" "6" \
    "$(printf '%s\n' "${server[@]}" | grep -cxE 'UTF8|SQL_ASCII|EUC_JP|EUC_KR|EUC_CN|LATIN1')"

# The smoke test: a fenced row, a stale write refused both ways.
smoke() {  # smoke TABLE: "TF001|0|10"
    cat <<SQL
CREATE TABLE $1 (id int PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO $1 VALUES (1, 10, 50);
\\set VERBOSITY sqlstate
UPDATE $1 SET stock = 0, fence = 40 WHERE id = 1;
\\set VERBOSITY default
SELECT fenced_update('$1', 40, '{"id": 1}', '{"stock": 0}');
SELECT stock FROM $1 WHERE id = 1;
SQL
}
run() {  # run DB ENCODING: psql in the database's own encoding, SQL on stdin
    PGCLIENTENCODING=$2 PGOPTIONS='-c client_min_messages=warning' psql -X -At -q -d "$1" 2>&1 | sed 's/^ERROR: *//' | paste -sd'|'
}

for enc in "${server[@]}"; do
    db="fencing_enc_$(echo "$enc" | tr 'A-Z' 'a-z')"
    out=$({ echo "CREATE EXTENSION fencing;"
            echo "SELECT extversion FROM pg_extension WHERE extname = 'fencing';"
            smoke enc_new; } | run "$db" "$enc")
    check "$enc: CREATE EXTENSION fencing ($current), a stale write refused" \
        "$current|TF001|0|10" "$out"
    out=$({ echo "DROP EXTENSION fencing CASCADE;"
            echo "CREATE EXTENSION fencing VERSION '1.0';"
            echo "CREATE TABLE enc_old (code text PRIMARY KEY, fence fencing_token);"
            echo "INSERT INTO enc_old VALUES ('ab', 40);"
            echo "BEGIN; SET LOCAL fencing.token = 45; DELETE FROM enc_old; COMMIT;"
            echo "ALTER EXTENSION fencing UPDATE;"
            echo "SELECT extversion FROM pg_extension WHERE extname = 'fencing';"
            echo "\\set VERBOSITY sqlstate"
            echo "INSERT INTO enc_old VALUES ('ab', 44);"
            echo "\\set VERBOSITY default"
            smoke enc_upd; } | run "$db" "$enc")
    check "$enc: CREATE EXTENSION fencing VERSION '1.0', UPDATE to $current, tombstone kept, a stale write refused" \
        "$current|TF001|TF001|0|10" "$out"
    psql -X -q -d postgres -c "DROP DATABASE $db" >/dev/null 2>&1
done

finish
