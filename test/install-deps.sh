#!/usr/bin/env bash
# Installs, idempotently, every Debian package the build, the tests and the demo
# need. Nothing is installed when everything already is.
set -euo pipefail

PACKAGES=(
    make g++ clang libclang-rt-14-dev clang-format
    postgresql-15 postgresql-client-15 postgresql-server-dev-15 libpq-dev
    libgtest-dev valgrind libipc-run-perl procps
    python3-psycopg python3-yaml
    etcd-server python3-etcd3 zookeeper python3-kazoo
)

missing=()
for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing: ${missing[*]}"
# A registry hiccup should not fail a run: three tries, a pause between.
for attempt in 1 2 3; do
    if $SUDO apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >/dev/null; then
        exit 0
    fi
    echo "apt-get failed (attempt $attempt of 3)" >&2
    sleep 10
done
exit 1
