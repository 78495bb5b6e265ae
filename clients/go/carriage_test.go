package fencing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	fencing "github.com/pgfencing/fencing/clients/go"

	"github.com/jackc/pgx/v5"
)

// In autocommit nothing carries a token by accident: a write without one is
// TF002 (ErrTokenRequired), so is one under a session-level SET; WithToken's
// token ends with its transaction, so the next autocommit write is refused
// again.
func TestTokenCarriageAutocommit(t *testing.T) {
	c := connect(t)
	table(t, c, "go_carriage")
	update := "UPDATE go_carriage SET qty = qty + 1 WHERE id = 1"
	required := func(what string, err error) {
		t.Helper()
		var tr *fencing.TokenRequiredError
		err = fencing.Classify(err)
		if !errors.Is(err, fencing.ErrTokenRequired) || !errors.As(err, &tr) {
			t.Errorf("%s: %v, want ErrTokenRequired", what, err)
		}
	}
	_, err := c.Exec(ctx(t), update)
	required("no token", err)
	_, err = c.Exec(ctx(t), "SET fencing.token = '60'")
	if err == nil {
		_, err = c.Exec(ctx(t), update)
		required("session token", err)
		run(t, c, "RESET fencing.token")
	} else {
		required("SET for the session", err)
	}
	err = fencing.WithToken(ctx(t), c, 60, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx(t), update)
		return err
	})
	if err != nil {
		t.Fatalf("WithToken: %v", err)
	}
	_, err = c.Exec(ctx(t), update)
	required("after WithToken", err)
	var fence int64
	if err := c.QueryRow(ctx(t), "SELECT fence FROM go_carriage").Scan(&fence); err != nil || fence != 60 {
		t.Errorf("fence %d, %v", fence, err)
	}
}

// fn's error rolls the transaction back: no write, no token left.
func TestWithTokenRollsBack(t *testing.T) {
	c := connect(t)
	table(t, c, "go_rollback")
	boom := errors.New("boom")
	err := fencing.WithToken(ctx(t), c, 70, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx(t), "UPDATE go_rollback SET qty = 9 WHERE id = 1"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	var qty int
	var token *string
	if err := c.QueryRow(ctx(t), "SELECT qty, current_setting('fencing.token', true) FROM go_rollback").Scan(&qty, &token); err != nil {
		t.Fatal(err)
	}
	if qty != 0 || (token != nil && *token != "") {
		t.Errorf("after rollback: qty %d, token %v", qty, token)
	}
}

// fenced_upsert / fenced_update / fenced_delete in autocommit, with the
// lease's token and with a stale one (0 rows).
func TestFencedCalls(t *testing.T) {
	c := connect(t)
	table(t, c, "go_fenced")
	r := resource(t)
	l := acquire(t, r, "a", 5*time.Second)
	key := map[string]int{"id": 2}
	n, err := l.FencedUpsert(ctx(t), c, "go_fenced", map[string]interface{}{"id": 2, "qty": 5})
	if err != nil || n != 1 {
		t.Fatalf("upsert: %d, %v", n, err)
	}
	n, err = l.FencedUpdate(ctx(t), c, "go_fenced", key, map[string]int{"qty": 6})
	if err != nil || n != 1 {
		t.Fatalf("update: %d, %v", n, err)
	}
	n, err = fencing.FencedUpdate(ctx(t), c, "go_fenced", l.Token()-1, key, map[string]int{"qty": 7})
	var stale *fencing.StaleTokenError
	if !errors.As(err, &stale) || n != 0 || stale.Offered != l.Token()-1 || stale.HWM != l.Token() {
		t.Fatalf("stale update: %d, %v (want *StaleTokenError)", n, err)
	}
	n, err = fencing.FencedUpdate(ctx(t), c, "go_fenced", l.Token()-1, key, map[string]int{"qty": 7},
		fencing.WithoutStaleError())
	if err != nil || n != 0 {
		t.Fatalf("stale update WithoutStaleError: %d, %v (want 0 rows)", n, err)
	}
	n, err = l.FencedUpdate(ctx(t), c, "go_fenced", map[string]int{"id": 99}, map[string]int{"qty": 7})
	if err != nil || n != 0 {
		t.Fatalf("missing row: %d, %v (want 0 rows, no error)", n, err)
	}
	n, err = l.FencedDelete(ctx(t), c, "go_fenced", key)
	if err != nil || n != 1 {
		t.Fatalf("delete: %d, %v", n, err)
	}
	var left int
	if err := c.QueryRow(ctx(t), "SELECT count(*) FROM go_fenced WHERE id = 2").Scan(&left); err != nil || left != 0 {
		t.Fatalf("rows left %d, %v", left, err)
	}
}

// fenced_update_result tells a stale token (a *StaleTokenError from Err())
// from a key that matches no row; ErrUnsupported before 1.5.
func TestFencedResult(t *testing.T) {
	c := connect(t)
	table(t, c, "go_result")
	key := map[string]int{"id": 1}
	if !hasFunction(t, c, "fenced_update_result") {
		t.Run("before 1.5: ErrUnsupported", func(t *testing.T) {
			_, err := fencing.FencedUpdateResult(ctx(t), c, "go_result", 5, key, map[string]int{"qty": 1})
			if !errors.Is(err, fencing.ErrUnsupported) {
				t.Fatalf("without fenced_update_result: %v, want ErrUnsupported", err)
			}
		})
		return
	}
	res, err := fencing.FencedUpdateResult(ctx(t), c, "go_result", 90, key, map[string]int{"qty": 1})
	if err != nil || res.Written != 1 || res.Stale != 0 || res.HWM != nil || res.Err() != nil {
		t.Fatalf("fresh: %+v, %v", res, err)
	}
	res, err = fencing.FencedUpdateResult(ctx(t), c, "go_result", 80, key, map[string]int{"qty": 2})
	var stale *fencing.StaleTokenError
	if err != nil || res.Written != 0 || res.Stale != 1 || !errors.As(res.Err(), &stale) {
		t.Fatalf("stale: %+v, %v", res, err)
	}
	if stale.Offered != 80 || stale.HWM != 90 || stale.TableName != "go_result" || stale.Key != `{"id":1}` {
		t.Errorf("stale error %+v", stale)
	}
	res, err = fencing.FencedUpdateResult(ctx(t), c, "go_result", 95, map[string]int{"id": 404}, map[string]int{"qty": 2})
	if err != nil || res.Written != 0 || res.Stale != 0 || res.Err() != nil {
		t.Fatalf("missing row: %+v, %v", res, err)
	}
	res, err = fencing.FencedDeleteResult(ctx(t), c, "go_result", 85, key)
	if err != nil || res.Stale != 1 || res.Err() == nil {
		t.Fatalf("stale delete: %+v, %v", res, err)
	}
	if stale.Strict {
		t.Errorf("a mark above the token is not a strict refusal: %+v", stale)
	}
	if _, err := c.Exec(ctx(t), "SELECT fencing_protect('go_result', strict => true)"); err != nil {
		t.Fatal(err)
	}
	res, err = fencing.FencedUpdateResult(ctx(t), c, "go_result", 90, key, map[string]int{"qty": 2})
	if err != nil || res.Stale != 1 || !errors.As(res.Err(), &stale) || !stale.Strict || stale.HWM != 90 {
		t.Fatalf("strict, equal token: %+v, %v, %+v", res, err, stale)
	}
	res, err = fencing.FencedUpsertResult(ctx(t), c, "go_result", fencing.MaxToken, map[string]interface{}{"id": 1, "qty": 3})
	if err != nil || res.Written != 1 || res.Stale != 0 {
		t.Fatalf("upsert at the max token: %+v, %v", res, err)
	}
}

// WithToken sets the token with a literal SET LOCAL, what Citus forwards to
// its workers, sent without arguments (the simple protocol: nothing prepared
// per token value, even on a connection in pgx's default statement-cache
// mode), and the token ends with the transaction. Read from another
// connection while the block runs: the server's own record of the statement.
func TestWithTokenSendsSetLocal(t *testing.T) {
	c, err := pgx.ConnectConfig(ctx(t), config(t)) // pgx's default exec mode, not the library's
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	watcher := connect(t)
	table(t, c, "go_set_local")
	pid := c.PgConn().PID()
	var query, state string
	for i := 0; i < 6; i++ {
		err = fencing.WithToken(ctx(t), c, 80, func(tx pgx.Tx) error {
			if err := watcher.QueryRow(ctx(t), "SELECT query, state FROM pg_catalog.pg_stat_activity WHERE pid = $1",
				pid).Scan(&query, &state); err != nil {
				return err
			}
			_, err := tx.Exec(ctx(t), "UPDATE go_set_local SET qty = qty + 1 WHERE id = 1")
			return err
		})
		if err != nil {
			t.Fatalf("WithToken: %v", err)
		}
		if query != "SET LOCAL fencing.token = '80'" || state != "idle in transaction" {
			t.Errorf("the server saw %q (%s), want SET LOCAL fencing.token = '80' (idle in transaction)", query, state)
		}
	}
	var prepared int
	var after string
	if err := c.QueryRow(ctx(t), "SELECT count(*) FROM pg_catalog.pg_prepared_statements WHERE statement ~ 'fencing[.]token'").
		Scan(&prepared); err != nil || prepared != 0 {
		t.Errorf("%d prepared statements set the token (%v), want 0", prepared, err)
	}
	if err := c.QueryRow(ctx(t), "SELECT current_setting('fencing.token')").Scan(&after); err != nil || after != "" {
		t.Errorf("after WithToken fencing.token is %q (%v), want it gone with the transaction", after, err)
	}
	var fence, qty int64
	if err := c.QueryRow(ctx(t), "SELECT fence, qty FROM go_set_local").Scan(&fence, &qty); err != nil || fence != 80 || qty != 6 {
		t.Errorf("fence %d qty %d (%v), want 80 and 6", fence, qty, err)
	}
}
