#!/usr/bin/env bash
# Compiles and runs the JDBC example: Debian's default-jdk-headless and
# libpostgresql-jdbc-java (/usr/share/java/postgresql.jar).
#   bash run.sh [BUILD_DIR]        (libpq environment: PGHOST, PGPORT, ...)
set -euo pipefail
cd "$(dirname "$0")"
BUILD=${1:-build}
JAR=/usr/share/java/postgresql.jar
mkdir -p "$BUILD"
javac -Xlint:all -Werror -d "$BUILD" -cp "$JAR" FencingExample.java
exec java -cp "$BUILD:$JAR" FencingExample
