#!/usr/bin/env bash
# Builds fencing-jdbc with Maven, offline, from Debian's Maven repository:
#   bash build.sh [OUT]   -> OUT/fencing-jdbc-VERSION.jar (and the test classes in OUT/test-classes)
# Needs Debian's maven, libpostgresql-jdbc-java and the plugin packages the POM names
# (libmaven-compiler-plugin-java libmaven-resources-plugin-java libmaven-jar-plugin-java
# libsurefire-java libmaven-install-plugin-java); with FENCING_JAVA_APT=1 it installs them.
# /usr/share/maven-repo serves as the local repository in offline mode (-o), read only: Maven
# resolves org.postgresql:postgresql and the plugins there and downloads nothing. Elsewhere,
# `mvn package` against Maven Central builds the same POM.
set -euo pipefail
cd "$(dirname "$0")"
OUT=${1:-build}
PKGS=(maven libpostgresql-jdbc-java libmaven-compiler-plugin-java libmaven-resources-plugin-java
    libmaven-jar-plugin-java libsurefire-java libmaven-install-plugin-java)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "${FENCING_JAVA_APT:-}" = 1 ]; then
        apt-get install -y --no-install-recommends "${missing[@]}" >&2
    else
        echo "build.sh: missing Debian packages: ${missing[*]} (apt-get install them, or FENCING_JAVA_APT=1)" >&2
        exit 1
    fi
fi
VERSION=$(sed -n "s/^default_version = '\(.*\)'/\1/p" ../../fencing.control)
POMVERSION=$(sed -n 's#^  <version>\(.*\)</version>#\1#p' pom.xml | head -1)
[ "$POMVERSION" = "$VERSION.0" ] || { echo "build.sh: pom.xml version $POMVERSION, extension $VERSION" >&2; exit 1; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
mvn -o -B -q -Dmaven.repo.local=/usr/share/maven-repo \
    ${PGJDBC_VERSION:+-Dpgjdbc.version=$PGJDBC_VERSION} package >&2
rm -rf "$OUT/test-classes" && cp -r target/test-classes "$OUT/test-classes"
cp "target/fencing-jdbc-$POMVERSION.jar" "$OUT/"
echo "$OUT/fencing-jdbc-$POMVERSION.jar"
