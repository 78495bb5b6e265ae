#!/bin/bash
# The client libraries' token through a Citus coordinator: each library's
# transaction helper sends `SET LOCAL fencing.token = '<token>'` as its own
# statement, which Citus forwards to the worker's transaction with
# citus.propagate_set_commands = 'local' (set_config() it never forwards).
# A coordinator and two workers on loopback, started here from scratch; a
# fenced row-scope table distributed with fencing_distribute(); per library
# (Python psycopg, psycopg async and asyncpg; Node; Go and Java when their
# toolchains are there) a write at a high token is accepted by the worker and
# one at a stale token refused with TF001. A control shows the route the
# libraries used before (set_config) still gets TF002 on the same cluster.
# Not part of `make test` (Citus is not packaged by Debian).
#
#   bash test/citus/clients.sh     ports CITUS_CLIENT_PORTS (default "54621 54622 54623")
#
# Exit status: 0 all passed, 1 a check failed, 77 Citus is not installed (no
# check ran: that is a skip, never a pass).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)
. test/lib/checks.sh

. test/citus/cluster.sh
skip_without_citus
citus_cluster "54621 54622 54623" CITUS_CLIENT_PORTS "citus.propagate_set_commands = 'local'"
citus_topology
# A fenced (auto-protected, row scope) table with one row per library, each
# at token 10, distributed: its rows and their tokens move to the workers.
q $C "CREATE TABLE inv (item text PRIMARY KEY, stock int, fence fencing_token)" >/dev/null
q $C "INSERT INTO inv SELECT i, 0, 10 FROM unnest(ARRAY['psycopg','psycopg-async','asyncpg','node','go','java','control']) i" >/dev/null
distributed=$(q $C "SELECT fencing_distribute('inv', 'item')")
check "fencing_distribute of the fenced table" "no error" "$(grep -q ERROR <<< "$distributed" && echo "$distributed" || echo "no error")"
check "the coordinator holds no shard of inv: every write goes to a worker" "0" \
    "$(q $C "SELECT count(*) FROM citus_shards WHERE table_name = 'inv'::regclass AND nodeport = $C")"
check "every shard of inv is protected in row scope on its worker" \
    "$(q $C "SELECT count(*) FROM citus_shards WHERE table_name = 'inv'::regclass")" \
    "$(q $C "SELECT count(*) FROM run_command_on_shards('inv', \$\$SELECT scope FROM fencing_protected WHERE table_name = '%s'::regclass\$\$) WHERE result = 'row'")"

export PGHOST=127.0.0.1 PGPORT=$C PGUSER=postgres PGDATABASE=postgres
# Each library's program: for ITEM and each TOKEN in turn, its transaction
# helper with one UPDATE of that row; one line per token, "ok" or the
# SQLSTATE of the refusal.
library_checks() {  # library_checks NAME ITEM COMMAND...: accepted at 20, TF001 at 15, the row at 20
    local name=$1 item=$2 out
    shift 2
    out=$("$@" "$item" 20 15 2>&1 | tr '\n' ' ')
    check "$name: the helper's write at token 20 reaches the worker and is accepted; at 15 the worker refuses it" \
        "ok TF001 " "$out"
    check "$name: the row on its worker carries token 20" "20" "$(q $C "SELECT fence FROM inv WHERE item = '$item'")"
}

# ---- control: the route the libraries used before 1.6
check "control: set_config('fencing.token', '20', true) is not forwarded to the worker (TF002)" "TF002" \
    "$("${RUN[@]}" "$BIN/psql" -h "$SOCK" -p $C -U postgres -d postgres -X -q -At -v VERBOSITY=sqlstate 2>&1 <<'SQL' |
BEGIN;
SELECT set_config('fencing.token', '20', true);
UPDATE inv SET stock = stock + 1 WHERE item = 'control';
COMMIT;
SQL
        sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\).*/\1/p' | head -1)"

# ---- Python: psycopg (sync and async) and asyncpg
PY=/usr/bin/python3
python_write() {  # python_write FLAVOR ITEM TOKEN...
    PYTHONPATH=$ROOT/clients/python/src "$PY" - "$@" <<'PYTHON'
import asyncio, sys
import pgfencing.asyncpg as fa
import pgfencing.psycopg as fp

flavor, item, tokens = sys.argv[1], sys.argv[2], [int(t) for t in sys.argv[3:]]
UPDATE = "UPDATE inv SET stock = stock + 1 WHERE item = %s"

def outcome(e):
    return getattr(e, "sqlstate", None) or repr(e)

async def run_async():
    if flavor == "asyncpg":
        conn = await fa.connect()
        for token in tokens:
            try:
                async with fa.transaction(conn, token):
                    await conn.execute(UPDATE.replace("%s", "$1"), item)
                print("ok")
            except Exception as e:
                print(outcome(e))
        await conn.close()
    else:
        conn = await fp.async_connect("", autocommit=True)
        for token in tokens:
            try:
                async with fp.async_transaction(conn, token):
                    await conn.execute(UPDATE, (item,))
                print("ok")
            except Exception as e:
                print(outcome(e))
        await conn.close()

if flavor == "psycopg":
    with fp.connect("", autocommit=True) as conn:
        for token in tokens:
            try:
                with fp.transaction(conn, token):
                    conn.execute(UPDATE, (item,))
                print("ok")
            except Exception as e:
                print(outcome(e))
else:
    asyncio.run(run_async())
PYTHON
}
if "$PY" -c "import psycopg, asyncpg" 2>/dev/null; then
    for flavor in psycopg psycopg-async asyncpg; do
        library_checks "Python $flavor" "$flavor" python_write "$flavor"
    done
else
    check "Python: psycopg and asyncpg importable by $PY" "yes" "no"
fi

# ---- Node: pg-fencing over node-postgres
node_write() {  # node_write ITEM TOKEN...
    node - "$ROOT/clients/node" "$@" <<'NODE'
const [lib, item, ...tokens] = process.argv.slice(2);
const fencing = require(lib);
const pg = require(require.resolve('pg', { paths: [lib] }));
(async () => {
  const client = new pg.Client();
  await client.connect();
  for (const token of tokens) {
    try {
      await fencing.withToken(client, BigInt(token), (c) => c.query('UPDATE inv SET stock = stock + 1 WHERE item = $1', [item]));
      console.log('ok');
    } catch (e) {
      console.log(e.code || String(e));
    }
  }
  await client.end();
})();
NODE
}
if [ ! -d clients/node/node_modules/pg ] && command -v npm >/dev/null; then
    (cd clients/node && npm ci --no-audit --no-fund --prefer-offline >/dev/null 2>&1)
fi
if [ -d clients/node/node_modules/pg ]; then
    library_checks "Node" node node_write
else
    check "Node: node-postgres installed (npm ci in clients/node)" "yes" "no"
fi

# ---- Go: the library through an application module (as clients/go/readme-check.sh builds one)
go_write() {  # go_write ITEM TOKEN...
    "$GOAPP/app" "$@"
}
GOAPP=$BASE/goapp
if GOENV=$(bash clients/go/deps.sh 2>/dev/null); then
    mkdir -p "$GOAPP"
    (
        eval "$GOENV"
        export GOCACHE=${GOCACHE:-$([ -w /var/cache ] && echo /var/cache/fencing-go/build-cache || echo "$ROOT/build/go-cache")}
        export GOPATH=${GOPATH:-$ROOT/build/gopath}
        MODFILE=${GOFLAGS#-modfile=}
        MODFILE=${MODFILE%% *}
        {
            printf 'module example.com/citus\n\ngo 1.26\n\n'
            echo "require github.com/pgfencing/fencing/clients/go v1.6.0"
            echo "replace github.com/pgfencing/fencing/clients/go => $ROOT/clients/go"
            grep -E '^(require|replace) ' "$MODFILE"
        } >"$GOAPP/go.mod"
        cat >"$GOAPP/main.go" <<'GO'
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	fencing "github.com/pgfencing/fencing/clients/go"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func main() {
	ctx := context.Background()
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		panic(err)
	}
	conn, err := fencing.Connect(ctx, cfg)
	if err != nil {
		panic(err)
	}
	defer conn.Close(ctx)
	item := os.Args[1]
	for _, arg := range os.Args[2:] {
		token, _ := strconv.ParseInt(arg, 10, 64)
		err := fencing.WithToken(ctx, conn, token, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "UPDATE inv SET stock = stock + 1 WHERE item = $1", item)
			return err
		})
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			fmt.Println("ok")
		case errors.As(err, &pgErr):
			fmt.Println(pgErr.Code)
		default:
			fmt.Println(err)
		}
	}
}
GO
        cd "$GOAPP" && GOFLAGS=-mod=mod go build -o app . >"$GOAPP/build.log" 2>&1
    )
fi
if [ -x "$GOAPP/app" ]; then
    library_checks "Go" go go_write
else
    echo "# Go: no toolchain from clients/go/deps.sh, or the program did not build; Go not checked"
    [ -f "$GOAPP/build.log" ] && sed 's/^/# /' "$GOAPP/build.log"
fi

# ---- Java: fencing-jdbc over pgjdbc
PGJDBC=/usr/share/java/postgresql.jar
java_write() {  # java_write ITEM TOKEN...
    java -cp "$JAVAAPP:$JAR:$PGJDBC" CitusWrite "$@"
}
JAVAAPP=$BASE/javaapp
if command -v javac >/dev/null && [ -f "$PGJDBC" ] && JAR=$(bash clients/java/build.sh "$BASE/javabuild" 2>/dev/null | tail -1) \
        && [ -f "$JAR" ]; then
    mkdir -p "$JAVAAPP"
    cat >"$JAVAAPP/CitusWrite.java" <<'JAVA'
import io.github.pgfencing.jdbc.Fencing;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Properties;

public final class CitusWrite {
    public static void main(String[] args) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", "postgres");
        String url = "jdbc:postgresql://127.0.0.1:" + System.getenv("PGPORT") + "/postgres";
        try (Connection c = DriverManager.getConnection(url, p)) {
            for (int i = 1; i < args.length; i++) {
                try {
                    Fencing.withToken(c, Long.parseLong(args[i]), w -> {
                        try (PreparedStatement ps = w.prepareStatement("UPDATE inv SET stock = stock + 1 WHERE item = ?")) {
                            ps.setString(1, args[0]);
                            return ps.executeUpdate();
                        }
                    });
                    System.out.println("ok");
                } catch (SQLException e) {
                    System.out.println(e.getSQLState());
                }
            }
        }
    }
}
JAVA
    javac -d "$JAVAAPP" -cp "$JAR:$PGJDBC" "$JAVAAPP/CitusWrite.java" >"$JAVAAPP/build.log" 2>&1
fi
if [ -f "$JAVAAPP/CitusWrite.class" ]; then
    library_checks "Java" java java_write
else
    echo "# Java: no javac, pgjdbc or fencing-jdbc build; Java not checked"
fi

finish
