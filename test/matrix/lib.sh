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
