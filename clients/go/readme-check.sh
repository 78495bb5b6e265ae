#!/usr/bin/env bash
# Builds the README's example as an application module of its own that
# requires this library by its module path, as a user's module does; the
# library is found through a replace directive (the same the README shows),
# pgx through the environment of deps.sh. Runs it when RUN=1 (against the
# PG* database).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
APP=$(mktemp -d)
trap 'rm -rf "$APP"' EXIT
eval "$("$HERE/deps.sh")"
# The README's example is the fenced ```go block after "## Use".
awk '/^## Use/ { on = 1 } on && /^```go/ { grab = 1; next } grab && /^```/ { exit } grab' "$HERE/README.md" >"$APP/main.go"
[ -s "$APP/main.go" ] || { echo "readme-check: no example in README.md" >&2; exit 1; }
# The application's go.mod, as the README says, plus the offline resolution
# that deps.sh's test.mod holds for pgx and its dependencies.
MODFILE=${GOFLAGS#-modfile=}
MODFILE=${MODFILE%% *}
{
    echo "module example.com/app"
    echo
    echo "go 1.26"
    echo
    echo "require github.com/pgfencing/fencing/clients/go v1.6.0"
    echo "replace github.com/pgfencing/fencing/clients/go => $HERE"
    grep -E '^(require|replace) ' "$MODFILE"
} >"$APP/go.mod"
cd "$APP"
GOFLAGS=-mod=mod go build -o app .
if [ "${RUN:-}" = 1 ]; then ./app; fi
