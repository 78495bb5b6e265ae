#!/usr/bin/env bash
# Builds vendor/ from the Debian packages' sources under /usr/share/gocode
# (golang-github-jackc-pgx-v4-dev and what it depends on), so that `go build`
# and `go test` run offline, in module mode with -mod=vendor. go.mod names the
# versions Debian 12 packages; vendor/modules.txt is written from go.mod, and
# holds every package the library imports, directly or not.
#
#   clients/go/vendor.sh            (re)build vendor/
#   GOCODE=/other/gocode/src ...    another source tree laid out the same way
set -euo pipefail
cd "$(dirname "$0")"
SRC=${GOCODE:-/usr/share/gocode/src}
ROOTS=(github.com/jackc/pgx/v4 github.com/jackc/pgx/v4/pgxpool github.com/jackc/pgconn
    github.com/jackc/pgtype github.com/jackc/pgproto3/v2)

[ -d "$SRC/github.com/jackc/pgx/v4" ] || {
    echo "vendor.sh: $SRC/github.com/jackc/pgx/v4 missing: apt-get install golang-github-jackc-pgx-v4-dev" >&2
    exit 1
}

# module version explicit(0|1), from go.mod's require lines
mapfile -t MODS < <(awk '
    /^require \(/ { inreq = 1; next }
    inreq && /^\)/ { inreq = 0; next }
    inreq && NF >= 2 { print $1, $2, ($0 ~ /\/\/ indirect/ ? 0 : 1) }' go.mod)

# Every non-standard package the roots import, resolved in GOPATH mode.
mapfile -t PKGS < <(GO111MODULE=off GOPATH=$(dirname "$SRC") GOFLAGS= \
    go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' "${ROOTS[@]}" | sort)

rm -rf vendor
mkdir vendor
{
    for line in "${MODS[@]}"; do
        read -r mod ver _ <<<"$line"
        echo "# $mod $ver"
        echo "## explicit"
        for pkg in "${PKGS[@]}"; do
            [ "$pkg" = "$mod" ] || [[ "$pkg" == "$mod"/* ]] || continue
            # a package of a nested module listed in go.mod belongs to that one
            owner=$mod
            for other in "${MODS[@]}"; do
                o=${other%% *}
                if [ ${#o} -gt ${#owner} ] && { [ "$pkg" = "$o" ] || [[ "$pkg" == "$o"/* ]]; }; then
                    owner=$o
                fi
            done
            [ "$owner" = "$mod" ] || continue
            echo "$pkg"
            mkdir -p "vendor/$pkg"
            find "$SRC/$pkg" -maxdepth 1 -type f \( -name '*.go' -o -name '*.s' -o -name '*.h' \) \
                ! -name '*_test.go' -exec cp {} "vendor/$pkg/" \;
        done
    done
} >vendor/modules.txt
# Every package must have found its module.
missing=0
for pkg in "${PKGS[@]}"; do
    grep -qx "$pkg" vendor/modules.txt || { echo "vendor.sh: no module in go.mod for $pkg" >&2; missing=1; }
done
exit $missing
