#!/usr/bin/env bash
# Fetches the Go toolchain and pgx v5 as Debian packages, without installing
# anything and without touching the host's apt configuration: a private apt
# directory lists Debian sid, `apt-get download` fetches the .debs and
# `dpkg -x` unpacks them under the cache directory. Run again, it reuses the
# cache (delete it to refresh). Prints the lines of an environment to eval:
#
#   eval "$(clients/go/deps.sh)"     # GOROOT, PATH, GOFLAGS (-modfile), GOPROXY=off ...
#
# Why sid: golang-github-jackc-pgx-v5-dev 5.9.2 declares `go 1.25.0` and its
# golang-golang-x-text-dev 0.43 `go 1.26.0`, so bookworm's Go 1.19 and
# bookworm-backports' golang-1.23 cannot build them; sid's golang-1.26 is a
# statically linked binary that runs on bookworm as it is.
#
# The library's own go.mod states the minimum versions it needs (what a user's
# module resolves through a module proxy). The tests build against exactly the
# unpacked Debian sources instead: this writes $CACHE/test.mod (require the
# unpacked versions, replace each module by its directory) and GOFLAGS selects
# it with -modfile, so no proxy, no checksum database and no vendor/ is needed.
#
#   FENCING_GO_DEPS   the cache directory (default: /var/cache/fencing-go/deps
#                     when /var/cache is writable, as the PostgreSQL builds'
#                     caches are, so a fresh clone reuses it; else <repo>/build/go-deps)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
if [ -z "${FENCING_GO_DEPS:-}" ] && [ -w /var/cache ]; then
    FENCING_GO_DEPS=/var/cache/fencing-go/deps
fi
CACHE=${FENCING_GO_DEPS:-$ROOT/build/go-deps}
GOVER=1.26
PKGS=(golang-$GOVER-go golang-$GOVER-src golang-github-jackc-pgx-v5-dev golang-github-jackc-puddle-v2-dev
    golang-golang-x-sync-dev golang-golang-x-text-dev golang-github-jackc-pgpassfile-dev
    golang-github-jackc-pgservicefile-dev)
# module path, and its directory under /usr/share/gocode/src in the packages
MODULES=(github.com/jackc/pgx/v5 github.com/jackc/puddle/v2 golang.org/x/sync golang.org/x/text
    github.com/jackc/pgpassfile github.com/jackc/pgservicefile)
# Modules that only the dependencies' own tests use, named in their go.mod
# files (pgpassfile's predates graph pruning, so Go loads them): replaced by
# empty stub modules. Nothing of them is compiled; an import of one would fail.
STUBS=(github.com/stretchr/testify github.com/stretchr/objx github.com/davecgh/go-spew
    github.com/pmezard/go-difflib gopkg.in/yaml.v3 gopkg.in/check.v1 github.com/kr/pretty
    github.com/kr/text github.com/rogpeppe/go-internal golang.org/x/tools golang.org/x/mod)

apt_opts() {
    local a=$CACHE/apt
    echo "-o Dir::Etc::sourcelist=$a/sources.list -o Dir::Etc::sourceparts=$a/sources.list.d" \
        "-o Dir::Etc::preferencesparts=$a/preferences.d -o Dir::State::Lists=$a/lists" \
        "-o Dir::Cache=$a/cache -o Dir::State::status=/dev/null -o Debug::NoLocking=1" \
        "-o APT::Sandbox::User=root"
}

if [ ! -f "$CACHE/unpacked.stamp" ]; then
    rm -rf "$CACHE"
    mkdir -p "$CACHE/apt/lists/partial" "$CACHE/apt/cache/archives/partial" "$CACHE/apt/sources.list.d" \
        "$CACHE/apt/preferences.d" "$CACHE/debs" "$CACHE/root"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main" \
        >"$CACHE/apt/sources.list"
    # shellcheck disable=SC2046
    apt-get $(apt_opts) -q update >&2
    # shellcheck disable=SC2046
    (cd "$CACHE/debs" && apt-get $(apt_opts) -q download "${PKGS[@]}" >&2)
    for deb in "$CACHE"/debs/*.deb; do dpkg -x "$deb" "$CACHE/root"; done
    touch "$CACHE/unpacked.stamp"
fi

GOROOT=$CACHE/root/usr/lib/go-$GOVER
SRC=$CACHE/root/usr/share/gocode/src
# The version required of each replaced module does not matter (the directory
# is used, for every version): the lowest valid one, so that the versions
# pgx's own go.mod requires win and are replaced too.
{
    echo "module github.com/pgfencing/fencing/clients/go"
    echo
    echo "go $GOVER"
    echo
    for m in "${MODULES[@]}"; do
        case $m in
        */v[0-9]*) echo "require $m ${m##*/}.0.0" ;;
        *) echo "require $m v0.0.0-00010101000000-000000000000" ;;
        esac
    done
    for m in "${MODULES[@]}"; do echo "replace $m => $SRC/$m"; done
    for m in "${STUBS[@]}"; do
        mkdir -p "$CACHE/stub/$m"
        echo "module $m" >"$CACHE/stub/$m/go.mod"
        echo "replace $m => $CACHE/stub/$m"
    done
} >"$CACHE/test.mod.new"
mv "$CACHE/test.mod.new" "$CACHE/test.mod"
: >"$CACHE/test.sum"

cat <<ENV
export GOROOT='$GOROOT'
export PATH='$GOROOT/bin':"\$PATH"
export GOTOOLCHAIN=local GOPROXY=off GOSUMDB=off GO111MODULE=on GOFLAGS='-modfile=$CACHE/test.mod -mod=mod'
export FENCING_GO_SRC='$SRC'
ENV
