#!/usr/bin/env bash
# Driver-level tests against the scratch cluster of test/run-all.sh (libpq
# environment already exported): psycopg 3 binding tokens (Debian's psycopg
# belongs to /usr/bin/python3), and ActiveRecord saving fenced rows.
set -uo pipefail
cd "$(dirname "$0")"
status=0
/usr/bin/python3 psycopg_tokens.py || status=1
# ActiveRecord warns once that it does not know the token type's OID; the
# models declare the column an Integer attribute.
ruby activerecord_tokens.rb 2> >(grep -v '^unknown OID' >&2) || status=1
exit $status
