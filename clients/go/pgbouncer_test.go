package fencing_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	fencing "github.com/pgfencing/fencing/clients/go"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Behind PgBouncer in transaction mode with one server connection shared by
// every client (test.sh starts Debian's PgBouncer when it is installed and
// names its port in FENCING_GO_PGBOUNCER_PORT): three leases renew on their
// own connections (the library's QueryExecModeExec) while three workers write
// through a pool in QueryExecModeExec; no lease is lost, every write
// commits, no session state stays on the server connection, and a stale
// write through the pool is a *StaleTokenError.
func TestBehindPgBouncer(t *testing.T) {
	port := os.Getenv("FENCING_GO_PGBOUNCER_PORT")
	if port == "" {
		t.Skip("no PgBouncer (test.sh starts one when /usr/sbin/pgbouncer exists)")
	}
	behindPgBouncer(t, port, " default_query_exec_mode=exec")
}

// The same behind PgBouncer 1.24 with max_prepared_statements (test.sh
// starts it from the trixie chroot, FENCING_GO_PGBOUNCER124_PORT), the pool
// in pgx's default mode: named statements from its statement cache.
func TestBehindPgBouncer124(t *testing.T) {
	port := os.Getenv("FENCING_GO_PGBOUNCER124_PORT")
	if port == "" {
		t.Skip("no PgBouncer 1.24 (test.sh starts one from the trixie chroot as root)")
	}
	behindPgBouncer(t, port, "")
}

func behindPgBouncer(t *testing.T, port, mode string) {
	c := connect(t)
	table(t, c, "go_bouncer")
	run(t, c, "INSERT INTO go_bouncer SELECT g, 0, 1 FROM generate_series(2, 3) g")
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=127.0.0.1 port=%s", port))
	if err != nil {
		t.Fatal(err)
	}
	pcfg, err := pgxpool.ParseConfig(fmt.Sprintf("host=127.0.0.1 port=%s pool_max_conns=3%s", port, mode))
	if err != nil {
		t.Fatal(err)
	}
	pcfg.AfterConnect = fencing.RegisterTypes
	pool, err := pgxpool.NewWithConfig(ctx(t), pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	writes := make([]int, 3)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := fmt.Sprintf("%s-%d", resource(t), w)
			l, err := fencing.Acquire(context.Background(), cfg, r, fencing.LeaseOptions{TTL: time.Second})
			if err != nil {
				errs <- fmt.Errorf("acquire %d: %w", w, err)
				return
			}
			defer l.Close()
			end := time.Now().Add(3 * time.Second)
			for time.Now().Before(end) {
				err := l.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
					_, err := tx.Exec(context.Background(), "UPDATE go_bouncer SET qty = qty + 1 WHERE id = $1", w+1)
					return err
				})
				var stale *fencing.StaleTokenError
				switch {
				case errors.As(err, &stale):
					// another worker's lease fenced this row higher: a refusal, not an error
				case err != nil:
					errs <- fmt.Errorf("worker %d: %w", w, err)
					return
				default:
					writes[w]++
				}
				time.Sleep(50 * time.Millisecond)
			}
			if !l.Valid() {
				errs <- fmt.Errorf("worker %d: lease lost behind PgBouncer: %v", w, l.Cause())
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w, n := range writes {
		if n == 0 {
			t.Errorf("worker %d wrote nothing", w)
		}
	}
	var token *string
	if err := pool.QueryRow(ctx(t), "SELECT current_setting('fencing.token', true)").Scan(&token); err != nil {
		t.Fatal(err)
	}
	if token != nil && *token != "" {
		t.Errorf("fencing.token %q left on the server connection", *token)
	}
	// A write through the pooler under a lease whose token is below the row's
	// HWM: *StaleTokenError with the offered token and the HWM.
	l, err := fencing.Acquire(ctx(t), cfg, resource(t), fencing.LeaseOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := fencing.WithToken(ctx(t), c, l.Token()+1000, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx(t), "UPDATE go_bouncer SET qty = 0 WHERE id = 3")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	err = l.BeginFunc(ctx(t), pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx(t), "UPDATE go_bouncer SET qty = -1 WHERE id = 3")
		return err
	})
	var stale *fencing.StaleTokenError
	if !errors.As(err, &stale) || stale.Offered != l.Token() || stale.HWM != l.Token()+1000 || stale.TableName != "go_bouncer" {
		t.Errorf("stale write through the pooler: %v", err)
	}
	t.Logf("writes %v", writes)
}
