# Shared by the version matrix scripts (sourced).

# install_extension PG_CONFIG DIR: copies the checkout into DIR (PGXS builds
# in the source directory, so a build against another server must not share
# the main build's objects), builds it there against PG_CONFIG with -Werror
# and installs it into that server. Build output goes to DIR/build.log and,
# on failure, to stdout as "# " lines.
install_extension() {
    local pg_config=$1 dir=$2 root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    tar -C "$root" --exclude=./build --exclude=./results --exclude=./output_iso \
        --exclude='*.o' --exclude='*.d' --exclude='*.so' --exclude=./.git -cf - . | tar -C "$dir" -xf -
    chmod -R a+rX "$dir"
    if make -s -C "$dir" PG_CONFIG="$pg_config" WERROR=-Werror >"$dir/build.log" 2>&1 &&
        make -s -C "$dir" PG_CONFIG="$pg_config" install >>"$dir/build.log" 2>&1; then
        return 0
    fi
    tail -40 "$dir/build.log" | sed 's/^/# /'
    return 1
}

# crash_lines FILE...: the lines of server logs that show an assertion
# failure (TRAP), a PANIC, or a backend killed by a signal other than the
# SIGKILL the crash tests send on purpose. Fails when no file exists, so that
# a scan of nothing never passes.
crash_lines() {
    local f found=0
    for f in "$@"; do [ -f "$f" ] && found=1; done
    [ "$found" = 1 ] || { echo "no server log to scan: $*"; return 1; }
    cat "$@" 2>/dev/null | grep -E 'TRAP:|PANIC:|terminated by signal ([0-8]|1[0-9]|[2-9][0-9])\b'
    return 0
}
