# Shared by the shell suites (test/sqlsmith): "ok N - ..."
# / "not ok N - ..." lines and a closing "N passed, N failed". Source it.
pass=0
fail=0
n=0

check() {  # check DESCRIPTION EXPECTED ACTUAL
    n=$((n + 1))
    if [ "$2" = "$3" ]; then
        pass=$((pass + 1))
        echo "ok $n - $1"
    else
        fail=$((fail + 1))
        echo "not ok $n - $1: expected '$2', got '$3'"
    fi
}

# sqlstate_of SQL [psql options...]: the SQLSTATE the statement fails with,
# empty when it succeeds.
sqlstate_of() {
    local sql=$1
    shift
    psql -X -q -v VERBOSITY=sqlstate "$@" -c "$sql" 2>&1 |
        sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\).*/\1/p' | head -1
}

finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
