package fencing_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	fencing "github.com/pgfencing/fencing/clients/go"

	"github.com/jackc/pgx/v5"
)

// The tests run against the database the PG* environment names (test.sh
// starts a scratch cluster and creates it, with the extension).

var resourceSeq int64

// resource is a resource name of this run's own.
func resource(t *testing.T) string {
	return fmt.Sprintf("go-%s-%d-%d", t.Name(), os.Getpid(), atomic.AddInt64(&resourceSeq, 1))
}

func config(t *testing.T) *pgx.ConnConfig {
	t.Helper()
	c, err := pgx.ParseConfig("")
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	return c
}

func connect(t *testing.T) *pgx.Conn {
	t.Helper()
	c, err := fencing.Connect(ctx(t), config(t))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func run(t *testing.T, c *pgx.Conn, sql string, args ...interface{}) {
	t.Helper()
	if _, err := c.Exec(ctx(t), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// table creates a protected table (row scope, auto_protect) with one row id 1.
func table(t *testing.T, c *pgx.Conn, name string) {
	t.Helper()
	run(t, c, "DROP TABLE IF EXISTS "+name)
	run(t, c, "CREATE TABLE "+name+" (id int PRIMARY KEY, qty int, fence fencing_token)")
	run(t, c, "INSERT INTO "+name+" VALUES (1, 0, 1)")
}

func acquire(t *testing.T, r string, holder string, ttl time.Duration) *fencing.Lease {
	t.Helper()
	l, err := fencing.Acquire(ctx(t), config(t), r, fencing.LeaseOptions{Holder: holder, TTL: ttl})
	if err != nil {
		t.Fatalf("Acquire(%s, %s): %v", r, holder, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

type leaseRow struct {
	holder string
	token  int64
	live   bool
	leftMs float64 // expires_at - clock_timestamp()
}

func serverLease(t *testing.T, c *pgx.Conn, r string) leaseRow {
	t.Helper()
	var row leaseRow
	err := c.QueryRow(ctx(t), `SELECT holder, token, live,
	        extract(epoch FROM expires_at - clock_timestamp()) * 1000
	   FROM fencing_leases WHERE resource = $1 AND namespace = 'default'`, r).
		Scan(&row.holder, &row.token, &row.live, &row.leftMs)
	if err != nil {
		t.Fatalf("fencing_leases for %s: %v", r, err)
	}
	return row
}

// hasFunction: whether the installed SQL has the function. From 1.5 on it
// must: a missing function there fails the test instead of testing less.
func hasFunction(t *testing.T, c *pgx.Conn, name string) bool {
	var n int
	var required bool
	err := c.QueryRow(ctx(t), `SELECT (SELECT count(*) FROM pg_proc WHERE proname = $1),
	        string_to_array(extversion, '.')::int[] >= '{1,5}'
	   FROM pg_extension WHERE extname = 'fencing'`, name).Scan(&n, &required)
	if err != nil {
		t.Fatal(err)
	}
	if required && n == 0 {
		t.Fatalf("the installed SQL (1.5 or later) has no %s()", name)
	}
	return n > 0
}
