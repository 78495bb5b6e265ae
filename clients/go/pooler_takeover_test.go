package fencing_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	fencing "github.com/pgfencing/fencing/clients/go"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A takeover through PgBouncer in transaction mode, on a cluster with the
// library preloaded, so the server ends the cut-off writer with TF003.
// test.sh runs these after the other tests, once it has restarted the
// cluster with shared_preload_libraries = fencing, and names the poolers'
// ports (a pool "gotest_tk" of 3 server connections: the lease's renewals
// and the sleeping write each hold one).

// TestTakeoverBehindPgBouncer: Debian 12's 1.18, the application's
// connection in QueryExecModeExec (no named statements before 1.21).
func TestTakeoverBehindPgBouncer(t *testing.T) {
	port := os.Getenv("FENCING_GO_TAKEOVER_PGBOUNCER_PORT")
	if port == "" {
		t.Skip("run by test.sh on the preloaded cluster (FENCING_GO_TAKEOVER_PGBOUNCER_PORT)")
	}
	takeoverBehindPgBouncer(t, port, " default_query_exec_mode=exec")
}

// TestTakeoverBehindPgBouncer124: Debian 13's 1.24 with
// max_prepared_statements, the application's connection in pgx's default
// mode (its statement cache).
func TestTakeoverBehindPgBouncer124(t *testing.T) {
	port := os.Getenv("FENCING_GO_TAKEOVER_PGBOUNCER124_PORT")
	if port == "" {
		t.Skip("run by test.sh on the preloaded cluster (FENCING_GO_TAKEOVER_PGBOUNCER124_PORT)")
	}
	takeoverBehindPgBouncer(t, port, "")
}

// The lease (TTL 20 s: no renewal sees the release first) is released behind
// the holder's back while its write sleeps in the server; another holder's
// acquire ends the write with TF003: *LeaseTakenOverError with SQLState
// TF003, the lease lost with reason takeover, the write rolled back, and no
// fencing.token or statement_timeout left on the pool's server connections.
func takeoverBehindPgBouncer(t *testing.T, port, mode string) {
	admin := connect(t)
	var preload string
	if err := admin.QueryRow(ctx(t), "SHOW shared_preload_libraries").Scan(&preload); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(preload, "fencing") {
		t.Fatalf("shared_preload_libraries = %q: the takeover would be 57P01, not TF003", preload)
	}
	r := resource(t)
	resourceTable(t, admin, "go_tk_pooler", r)
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=127.0.0.1 port=%s dbname=gotest_tk%s", port, mode))
	if err != nil {
		t.Fatal(err)
	}
	l, err := fencing.Acquire(ctx(t), cfg, r, fencing.LeaseOptions{Holder: "a", TTL: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	app, err := fencing.Connect(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(context.Background())
	// A few writes first: in pgx's default mode the statement cache prepares
	// named statements, which PgBouncer 1.24 must keep per client.
	for i := 0; i < 6; i++ {
		if err := l.BeginFunc(ctx(t), app, func(tx pgx.Tx) error {
			_, err := tx.Exec(context.Background(), "UPDATE go_tk_pooler SET v = $1 WHERE id = 1", "a")
			return err
		}); err != nil {
			t.Fatalf("write %d through the pooler: %v", i, err)
		}
	}
	done := writeSleeping(t, admin, l, app, "go_tk_pooler")
	run(t, admin, "SELECT fencing_release($1, $2::text::fencing_token)", r, strconv.FormatInt(l.Token(), 10))
	var tok2 *int64
	if err := admin.QueryRow(ctx(t), "SELECT fencing_acquire($1, 'other', '30 s', '5 s')::int8", r).Scan(&tok2); err != nil || tok2 == nil {
		t.Fatalf("the other acquire: %v %v", tok2, err)
	}
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the write was not ended")
	}
	var taken *fencing.LeaseTakenOverError
	var pgErr *pgconn.PgError
	if !errors.As(err, &taken) || taken.SQLState != fencing.SQLStateTakenOver || !errors.Is(err, fencing.ErrLeaseTakenOver) ||
		!errors.Is(err, fencing.ErrLeaseLost) || !errors.As(err, &pgErr) || pgErr.Code != fencing.SQLStateTakenOver {
		t.Fatalf("the cut-off write through the pooler: %v", err)
	}
	if l.LostError() == nil || l.LostError().Reason != fencing.ReasonTakeover {
		t.Errorf("lost reason %v, want takeover (TF003 was the first signal)", l.LostError())
	}
	var v string
	if err := admin.QueryRow(ctx(t), "SELECT v FROM go_tk_pooler WHERE id = 1").Scan(&v); err != nil || v != "a" {
		t.Errorf("row after the cut-off write: %q %v", v, err)
	}
	probe, err := fencing.Connect(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close(context.Background())
	for i := 0; i < 6; i++ {
		var timeout, token string
		if err := probe.QueryRow(ctx(t), "SELECT current_setting('statement_timeout'),"+
			" coalesce(current_setting('fencing.token', true), '')").Scan(&timeout, &token); err != nil {
			t.Fatal(err)
		}
		if timeout != "0" || token != "" {
			t.Errorf("session state on a server connection: statement_timeout %q, fencing.token %q", timeout, token)
		}
	}
}
