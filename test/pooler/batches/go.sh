#!/usr/bin/env bash
# Builds batch.go into OUT (go.sh OUT), offline, against the Go toolchain and the
# pgx v5 sources that clients/go/deps.sh unpacks from Debian sid's packages
# (its GOFLAGS: -modfile, every module replaced by its unpacked directory).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=$1
env=$("$ROOT/clients/go/deps.sh")
eval "$env"
export GOCACHE=${GOCACHE:-$([ -w /var/cache ] && echo /var/cache/fencing-go/build-cache || echo "$ROOT/build/go-cache")}
export GOPATH=${GOPATH:-$ROOT/build/gopath}
cd "$HERE"
go build -o "$OUT" batch.go
