package fencing_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	fencing "github.com/pgfencing/fencing/clients/go"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Takeover (CONTRACT.md section 4a). The suite's cluster does not preload the
// library, so a takeover ends the writer with 57P01; TF003 is checked end to
// end by the conformance suite.

// resourceTable creates a table of resource scope with row 1 on resource r:
// a takeover ends only writers holding the resource's HWM lock.
func resourceTable(t *testing.T, c *pgx.Conn, name, r string) {
	t.Helper()
	run(t, c, "DROP TABLE IF EXISTS "+name)
	run(t, c, "CREATE TABLE "+name+" (id int PRIMARY KEY, res text NOT NULL, v text, fence fencing_token)")
	run(t, c, "SELECT fencing_protect($1, scope => 'resource', resource_column => 'res')", name)
	err := fencing.WithToken(ctx(t), c, 1, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx(t), "INSERT INTO "+name+" VALUES (1, $1, 'a')", r)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writing acquires a lease on a resource of its own, with row 1 of table
// name on it, and starts a write under the lease that sleeps in the server
// after its UPDATE; it returns once the write sleeps. The channel gets the
// write's error.
func writing(t *testing.T, admin *pgx.Conn, name string) (string, *fencing.Lease, <-chan error) {
	t.Helper()
	r := resource(t)
	resourceTable(t, admin, name, r)
	l := acquire(t, r, "a", 3*time.Second)
	return r, l, writeSleeping(t, admin, l, connect(t), name)
}

// writeSleeping starts a write under l on app that updates row 1 of table
// name, then sleeps in the server; it returns once the write sleeps. The
// channel gets the write's error.
func writeSleeping(t *testing.T, admin *pgx.Conn, l *fencing.Lease, app *pgx.Conn, name string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		done <- l.BeginFunc(context.Background(), app, func(tx pgx.Tx) error {
			if _, err := tx.Exec(context.Background(), "UPDATE "+name+" SET v = 'cut-off' WHERE id = 1"); err != nil {
				return err
			}
			_, err := tx.Exec(context.Background(), "SELECT pg_sleep(10)")
			return err
		})
	}()
	for i := 0; i < 250; i++ {
		var n int
		if err := admin.QueryRow(ctx(t), "SELECT count(*) FROM pg_stat_activity"+
			" WHERE query = 'SELECT pg_sleep(10)' AND state = 'active'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return done
}

// Released behind the holder's back; once a renewal saw it (refused),
// another holder's acquire ends the write (57P01): *LeaseTakenOverError,
// errors.Is ErrLeaseTakenOver and ErrLeaseLost, nothing committed.
func TestTakeoverAfterLost(t *testing.T) {
	c := connect(t)
	r, l, done := writing(t, c, "go_tk_lost")
	run(t, c, "SELECT fencing_release($1, $2::text::fencing_token)", r, strconv.FormatInt(l.Token(), 10))
	select {
	case <-l.Lost():
	case <-time.After(3 * time.Second):
		t.Fatal("no lost signal after the release")
	}
	var tok2 *int64
	if err := c.QueryRow(ctx(t), "SELECT fencing_acquire($1, 'other', '30 s', '5 s')::int8", r).Scan(&tok2); err != nil || tok2 == nil {
		t.Fatalf("the other acquire: %v %v", tok2, err)
	}
	err := <-done
	var taken *fencing.LeaseTakenOverError
	var lost *fencing.LeaseLostError
	var pgErr *pgconn.PgError
	if !errors.As(err, &taken) || taken.SQLState != "57P01" || !errors.Is(err, fencing.ErrLeaseTakenOver) ||
		!errors.Is(err, fencing.ErrLeaseLost) || !errors.As(err, &lost) || lost.Reason != fencing.ReasonTakeover ||
		!errors.As(err, &pgErr) {
		t.Fatalf("the cut-off write: %v", err)
	}
	if l.LostError().Reason != fencing.ReasonRefused {
		t.Errorf("lost reason %q, want refused (the first known)", l.LostError().Reason)
	}
	var v string
	if err := c.QueryRow(ctx(t), "SELECT v FROM go_tk_lost WHERE id = 1").Scan(&v); err != nil || v != "a" {
		t.Errorf("row after the cut-off write: %q %v", v, err)
	}
}

// pg_terminate_backend (57P01, as a shutdown) of a held lease's write is the
// driver's error, not a takeover; the lease stays held.
func TestTerminatedWhileHeldIsNotTakeover(t *testing.T) {
	c := connect(t)
	_, l, done := writing(t, c, "go_tk_held")
	run(t, c, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(10)' AND state = 'active'")
	err := <-done
	time.Sleep(1500 * time.Millisecond)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57P01" || errors.Is(err, fencing.ErrLeaseLost) {
		t.Fatalf("the terminated write: %v", err)
	}
	if l.State() != fencing.StateHeld {
		t.Errorf("state %v, want held", l.State())
	}
}
