#!/usr/bin/env bash
# Builds the fencing JDBC client with the JDK alone (no Maven, no network):
#   bash build.sh [OUT]   -> OUT/fencing-jdbc-VERSION.jar, OUT/fencing-jdbc-VERSION-sources.jar
# Needs default-jdk-headless and libpostgresql-jdbc-java (/usr/share/java/postgresql.jar).
set -euo pipefail
cd "$(dirname "$0")"
OUT=${1:-build}
VERSION=$(sed -n "s/^default_version = '\(.*\)'/\1/p" ../../fencing.control)
PGJDBC=${PGJDBC:-/usr/share/java/postgresql.jar}
rm -rf "$OUT/classes" && mkdir -p "$OUT/classes"
javac -Xlint:all -Werror --release 11 -d "$OUT/classes" -cp "$PGJDBC" $(find src/main/java -name '*.java' | sort)
cat >"$OUT/MANIFEST.MF" <<MF
Automatic-Module-Name: fencing.jdbc
Implementation-Title: fencing-jdbc
Implementation-Version: $VERSION
Class-Path: /usr/share/java/postgresql.jar
MF
jar --create --file "$OUT/fencing-jdbc-$VERSION.jar" --manifest "$OUT/MANIFEST.MF" -C "$OUT/classes" .
jar --create --file "$OUT/fencing-jdbc-$VERSION-sources.jar" -C src/main/java .
echo "$OUT/fencing-jdbc-$VERSION.jar"
