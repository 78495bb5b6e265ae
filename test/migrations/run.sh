#!/usr/bin/env bash
# The migrations suite: migration tools as users run them on fenced tables,
# under fenced writers with the commit order recorded (suite.py, fenced.py):
#
#   django        a Django project (django/), manage.py migrate one migration at a
#                 time: AddField, RunPython backfill, AlterField, RenameField,
#                 RemoveField, BigAutoField (int -> bigint primary keys)
#   alembic       an Alembic project (alembic/): autogenerate, upgrade, downgrade,
#                 batch_alter_table(recreate='always') in every scope
#   activerecord  ActiveRecord 6.1's migrator (activerecord/): add_column,
#                 change_column int -> bigint (primary keys) and string -> text,
#                 rename_column
#   inplace       the expand/contract set in place: ADD COLUMN with and without
#                 defaults, a volatile default, CREATE INDEX CONCURRENTLY, ALTER TYPE
#                 of a data column, a batched backfill, CHECK and FOREIGN KEY NOT
#                 VALID then VALIDATE, SET NOT NULL, RENAME COLUMN and TABLE
#   swap          the pg-osc-style shadow-table swap in row, table and resource scope
#                 with fencing_transfer_state()
#
# After each migration: stale accepted = 0, acknowledged writes lost = 0, no HWM,
# tombstone or floor lowered, the policy and guards kept, a stale and a
# token-less write refused for every fence key. MIG_SECTIONS picks sections;
# MIG_WRITERS (3) and MIG_SEED the writers.
#
# Runs on a scratch cluster of its own (port FENCING_MIGRATIONS_PGPORT, default
# FENCING_PGPORT + 600) with the installed extension. Needs python3-psycopg,
# python3-django, python3-psycopg2, python3-alembic, python3-sqlalchemy,
# ruby-activerecord, ruby-pg. Prints "ok N - ..." lines; exits non-zero on a
# failure.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

WORK=$(mktemp -d /tmp/fencing-migrations.XXXXXX)
chmod 755 "$WORK"
export FENCING_PGPORT=${FENCING_MIGRATIONS_PGPORT:-$((${FENCING_PGPORT:-54329} + 600))}
export FENCING_CLUSTER_DIR=$WORK/cluster
trap 'test/cluster.sh stop; rm -rf "$WORK"' EXIT
test/cluster.sh start || exit 1
eval "$(test/cluster.sh env)"
export TMPDIR=$WORK
# Python's bytecode of the test projects stays out of the source tree.
export PYTHONDONTWRITEBYTECODE=1

# shellcheck disable=SC2086
/usr/bin/python3 test/migrations/suite.py ${MIG_SECTIONS:-django alembic activerecord inplace swap}
