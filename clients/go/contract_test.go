package fencing_test

import (
	"errors"
	"testing"
	"time"

	fencing "github.com/pgfencing/fencing/clients/go"

	"github.com/jackc/pgx/v5"
)

// After Close the lease is closed, not lost: its state says so, Lost() stays
// open, every write through it refuses with ErrLeaseClosed (not
// ErrLeaseLost), and a second Release sends nothing.
func TestClosedIsNotLost(t *testing.T) {
	c := connect(t)
	table(t, c, "go_closed")
	r := resource(t)
	l := acquire(t, r, "a", 3*time.Second)
	if l.State() != fencing.StateHeld {
		t.Fatalf("state %s", l.State())
	}
	released, err := l.Release()
	if err != nil || !released {
		t.Fatalf("Release: %v, %v", released, err)
	}
	if l.State() != fencing.StateClosed || l.LostError() != nil {
		t.Errorf("after Release: state %s, lost %v", l.State(), l.LostError())
	}
	select {
	case <-l.Lost():
		t.Error("Lost() closed by Release")
	default:
	}
	err = l.BeginFunc(ctx(t), c, func(tx pgx.Tx) error {
		t.Error("the block ran under a closed lease")
		return nil
	})
	if !errors.Is(err, fencing.ErrLeaseClosed) || errors.Is(err, fencing.ErrLeaseLost) {
		t.Errorf("BeginFunc after Release: %v", err)
	}
	if _, err := l.FencedUpdate(ctx(t), c, "go_closed", map[string]int{"id": 1}, map[string]int{"qty": 3}); !errors.Is(err, fencing.ErrLeaseClosed) {
		t.Errorf("FencedUpdate after Release: %v", err)
	}
	if again, err := l.Release(); again || err != nil {
		t.Errorf("second Release: %v, %v", again, err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close after Release: %v", err)
	}
}

// A lost lease (its renewals blocked past the safe time) is still released
// on Close: the server's lease, live until its TTL, ends at once, so the next
// holder does not wait; the lease reports closed and lost, and no second
// lost signal fires.
func TestReleaseLostLease(t *testing.T) {
	c := connect(t)
	r := resource(t)
	ttl := 2 * time.Second
	l := acquire(t, r, "a", ttl)
	locker := connect(t)
	tx, err := locker.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx(t), "SELECT 1 FROM fencing.lease WHERE resource = $1 FOR UPDATE", r); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
	case <-time.After(2 * ttl):
		t.Fatal("Lost() did not fire")
	}
	if err := tx.Rollback(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if row := serverLease(t, c, r); !row.live {
		t.Fatalf("the server's lease should still be live before Close: %+v", row)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close of a lost lease: %v", err)
	}
	if row := serverLease(t, c, r); row.live {
		t.Errorf("a lost lease still live on the server after Close: %+v", row)
	}
	var lost *fencing.LeaseLostError
	if l.State() != fencing.StateClosed || !errors.As(l.LostError(), &lost) || lost.Reason != fencing.ReasonExpired {
		t.Errorf("after Close: state %s, lost %v", l.State(), l.LostError())
	}
}

// BeginFunc checks the lease before COMMIT: a lease lost while the block
// runs (renewals blocked past the safe time) rolls back with ErrLeaseLost.
func TestBeginFuncChecksBeforeCommit(t *testing.T) {
	c := connect(t)
	table(t, c, "go_commit_check")
	r := resource(t)
	ttl := time.Second
	l := acquire(t, r, "a", ttl)
	locker := connect(t)
	tx, err := locker.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx(t))
	if _, err := tx.Exec(ctx(t), "SELECT 1 FROM fencing.lease WHERE resource = $1 FOR UPDATE", r); err != nil {
		t.Fatal(err)
	}
	err = l.BeginFunc(ctx(t), c, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx(t), "UPDATE go_commit_check SET qty = 5 WHERE id = 1"); err != nil {
			return err
		}
		time.Sleep(ttl + 200*time.Millisecond)
		return nil
	})
	if !errors.Is(err, fencing.ErrLeaseLost) {
		t.Fatalf("BeginFunc across the loss: %v, want ErrLeaseLost", err)
	}
	var qty int
	if err := c.QueryRow(ctx(t), "SELECT qty FROM go_commit_check WHERE id = 1").Scan(&qty); err != nil || qty != 0 {
		t.Errorf("committed under a lost lease: qty %d, %v", qty, err)
	}
}

// The helpers never join, commit or roll back the caller's transaction: a
// pgx.Tx or a connection with an open transaction is refused before
// anything is sent.
func TestRefusesOpenTransaction(t *testing.T) {
	c := connect(t)
	table(t, c, "go_open_tx")
	tx, err := c.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx(t))
	if _, err := tx.Exec(ctx(t), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	ran := false
	block := func(pgx.Tx) error { ran = true; return nil }
	if err := fencing.WithToken(ctx(t), tx, 10, block); !errors.Is(err, fencing.ErrTransactionInProgress) {
		t.Errorf("WithToken(pgx.Tx): %v", err)
	}
	if err := fencing.WithToken(ctx(t), c, 10, block); !errors.Is(err, fencing.ErrTransactionInProgress) {
		t.Errorf("WithToken(conn inside a transaction): %v", err)
	}
	if ran {
		t.Error("the block ran")
	}
	if c.PgConn().TxStatus() != 'T' {
		t.Errorf("the caller's transaction was ended: status %q", c.PgConn().TxStatus())
	}
}

// A block that swallows a failed statement's error: the server answers
// COMMIT with ROLLBACK, and WithToken says ErrTransactionAborted.
func TestCommitAnsweredWithRollback(t *testing.T) {
	c := connect(t)
	table(t, c, "go_aborted")
	err := fencing.WithToken(ctx(t), c, 10, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx(t), "UPDATE go_aborted SET qty = 4 WHERE id = 1"); err != nil {
			return err
		}
		_, _ = tx.Exec(ctx(t), "SELECT 1/0")
		return nil
	})
	if !errors.Is(err, fencing.ErrTransactionAborted) {
		t.Errorf("swallowed error: %v, want ErrTransactionAborted", err)
	}
}
