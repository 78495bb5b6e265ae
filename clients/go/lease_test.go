package fencing_test

import (
	"errors"
	"testing"
	"time"

	fencing "github.com/pgfencing/fencing/clients/go"

	"github.com/jackc/pgx/v5"
)

// Acquire issues a token and a live lease; another holder is refused while it
// lives; Close releases it and the next holder's token is higher.
func TestAcquire(t *testing.T) {
	c := connect(t)
	r := resource(t)
	a := acquire(t, r, "a", 5*time.Second)
	if a.Token() <= 0 {
		t.Fatalf("token %d", a.Token())
	}
	if row := serverLease(t, c, r); !row.live || row.holder != "a" || row.token != a.Token() {
		t.Fatalf("server lease %+v, token %d", row, a.Token())
	}
	_, err := fencing.Acquire(ctx(t), config(t), r, fencing.LeaseOptions{Holder: "b", TTL: time.Second})
	if !errors.Is(err, fencing.ErrNotAcquired) {
		t.Fatalf("second holder: %v, want ErrNotAcquired", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if row := serverLease(t, c, r); row.live {
		t.Fatalf("after Close: %+v", row)
	}
	if !errors.Is(a.Cause(), fencing.ErrLeaseClosed) || a.Context().Err() == nil {
		t.Errorf("after Close: cause %v, context %v", a.Cause(), a.Context().Err())
	}
	select {
	case <-a.Lost():
		t.Error("Lost() closed by Close")
	default:
	}
	b := acquire(t, r, "b", time.Second)
	if b.Token() <= a.Token() {
		t.Errorf("next token %d not above %d", b.Token(), a.Token())
	}
}

// A waiting Acquire gets the lease when the holder releases it, well before
// its wait ends.
func TestAcquireWait(t *testing.T) {
	r := resource(t)
	a := acquire(t, r, "a", 10*time.Second)
	go func() {
		time.Sleep(300 * time.Millisecond)
		a.Close()
	}()
	start := time.Now()
	b, err := fencing.Acquire(ctx(t), config(t), r, fencing.LeaseOptions{Holder: "b", TTL: time.Second, Wait: 5 * time.Second})
	if err != nil {
		t.Fatalf("waiting Acquire: %v", err)
	}
	defer b.Close()
	if took := time.Since(start); took < 250*time.Millisecond || took > 3*time.Second {
		t.Errorf("took %v: want about the 300 ms until the release", took)
	}
	if b.Token() <= a.Token() {
		t.Errorf("token %d not above %d", b.Token(), a.Token())
	}
	// A grant after a wait longer than the TTL: the lease counts from after
	// the grant, so it is valid and kept.
	c1 := acquire(t, resource(t), "c1", 10*time.Second)
	go func() {
		time.Sleep(1200 * time.Millisecond)
		c1.Close()
	}()
	c2, err := fencing.Acquire(ctx(t), config(t), c1.Resources()[0], fencing.LeaseOptions{Holder: "c2", TTL: time.Second, Wait: 5 * time.Second})
	if err != nil {
		t.Fatalf("waiting Acquire past its TTL: %v", err)
	}
	defer c2.Close()
	time.Sleep(1500 * time.Millisecond)
	if !c2.Valid() {
		t.Errorf("a lease granted after a wait longer than its TTL: %v", c2.Cause())
	}
	// A wait that ends with the lease still held: ErrNotAcquired, after it.
	start = time.Now()
	_, err = fencing.Acquire(ctx(t), config(t), r, fencing.LeaseOptions{Holder: "c", TTL: time.Second, Wait: 400 * time.Millisecond})
	if !errors.Is(err, fencing.ErrNotAcquired) || time.Since(start) < 350*time.Millisecond {
		t.Errorf("bounded wait: %v after %v", err, time.Since(start))
	}
}

// The heartbeat keeps the lease past several TTLs: still live on the server,
// nobody else gets it, writes through it commit.
func TestHeartbeat(t *testing.T) {
	c := connect(t)
	table(t, c, "go_heartbeat")
	r := resource(t)
	ttl := time.Second
	l := acquire(t, r, "a", ttl)
	time.Sleep(4 * ttl)
	if !l.Valid() {
		t.Fatalf("lease lost: %v", l.Cause())
	}
	if row := serverLease(t, c, r); !row.live || row.token != l.Token() || row.leftMs <= 0 {
		t.Fatalf("server lease after 4 TTLs: %+v", row)
	}
	_, err := fencing.Acquire(ctx(t), config(t), r, fencing.LeaseOptions{Holder: "b", TTL: time.Second})
	if !errors.Is(err, fencing.ErrNotAcquired) {
		t.Fatalf("other holder: %v", err)
	}
	err = l.BeginFunc(ctx(t), c, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx(t), "UPDATE go_heartbeat SET qty = 2 WHERE id = 1")
		return err
	})
	if err != nil {
		t.Fatalf("write under the lease: %v", err)
	}
}

// Renewals that hang (another transaction holds the lease row) make the
// lease lost before its TTL ends: when Lost() fires, the server still shows
// the lease live. Writes through the lease then refuse with ErrLeaseLost.
func TestLostBeforeTTLWhenRenewalsHang(t *testing.T) {
	c := connect(t)
	r := resource(t)
	ttl := 2 * time.Second
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
	select {
	case <-l.Lost():
	case <-time.After(2 * ttl):
		t.Fatal("Lost() did not fire")
	}
	row := serverLease(t, c, r)
	if !row.live || row.leftMs <= 0 {
		t.Errorf("when Lost() fired the lease should still be live on the server: %+v", row)
	}
	t.Logf("lost with %.0f ms of the TTL left", row.leftMs)
	if !errors.Is(l.Cause(), fencing.ErrLeaseLost) || l.Context().Err() == nil {
		t.Errorf("cause %v, context %v", l.Cause(), l.Context().Err())
	}
	err = l.BeginFunc(ctx(t), c, func(pgx.Tx) error { return nil })
	if !errors.Is(err, fencing.ErrLeaseLost) {
		t.Errorf("BeginFunc after loss: %v", err)
	}
	if _, err := l.FencedUpdate(ctx(t), c, "x", map[string]int{"id": 1}, map[string]int{}); !errors.Is(err, fencing.ErrLeaseLost) {
		t.Errorf("FencedUpdate after loss: %v", err)
	}
	// Close does not wait for the hanging renewal (its release waits for the
	// row lock, bounded by max(TTL/3, 1 s)); after it the lease is closed and
	// still reports the loss.
	start := time.Now()
	l.Close()
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("Close took %v", took)
	}
	if !errors.Is(l.Cause(), fencing.ErrLeaseClosed) || l.LostError() == nil || l.State() != fencing.StateClosed {
		t.Errorf("after Close: cause %v, lost %v, state %s", l.Cause(), l.LostError(), l.State())
	}
}

// A renewal refused by the server (the lease expired and another holder
// took it) makes the lease lost at once.
func TestLostWhenRenewalRefused(t *testing.T) {
	c := connect(t)
	r := resource(t)
	l := acquire(t, r, "a", 5*time.Second)
	run(t, c, "UPDATE fencing.lease SET expires_at = clock_timestamp() WHERE resource = $1", r)
	b := acquire(t, r, "b", 5*time.Second)
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost() did not fire")
	}
	if !errors.Is(l.Cause(), fencing.ErrLeaseLost) || b.Token() <= l.Token() {
		t.Errorf("cause %v, tokens %d then %d", l.Cause(), l.Token(), b.Token())
	}
}

// Re-acquire by the live holder returns its token with the TTL extended
// (1.5); before (no fencing_check either), the holder is refused like anyone.
func TestReacquireByHolder(t *testing.T) {
	c := connect(t)
	r := resource(t)
	a := acquire(t, r, "a", 2*time.Second)
	before := serverLease(t, c, r)
	again, err := fencing.Acquire(ctx(t), config(t), r, fencing.LeaseOptions{Holder: "a", TTL: 10 * time.Second})
	if errors.Is(err, fencing.ErrNotAcquired) && !hasFunction(t, c, "fencing_check") {
		t.Run("before 1.5: refused, the lease untouched", func(t *testing.T) {
			if row := serverLease(t, c, r); !row.live || row.token != a.Token() || row.holder != "a" {
				t.Fatalf("after the refused re-acquire: %+v", row)
			}
		})
		return
	}
	if err != nil {
		t.Fatalf("re-acquire: %v", err)
	}
	defer again.Close()
	after := serverLease(t, c, r)
	if again.Token() != a.Token() || after.leftMs <= before.leftMs+5000 {
		t.Errorf("re-acquire: token %d (want %d), ms left %.0f then %.0f", again.Token(), a.Token(), before.leftMs, after.leftMs)
	}
}

// The heartbeat reconnects when its connection is killed, in time to keep
// the lease.
func TestHeartbeatReconnects(t *testing.T) {
	c := connect(t)
	r := resource(t)
	l := acquire(t, r, "a", 1500*time.Millisecond)
	time.Sleep(700 * time.Millisecond) // a renewal or two on the lease's connection
	var killed int
	err := c.QueryRow(ctx(t), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
	   WHERE pid <> pg_backend_pid() AND datname = current_database()
	     AND query LIKE '%fencing_renew(r, t,%'`).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminated %d lease connections: %v", killed, err)
	}
	time.Sleep(3 * time.Second)
	if !l.Valid() {
		t.Fatalf("lost after its connection was killed: %v", l.Cause())
	}
	if row := serverLease(t, c, r); !row.live || row.token != l.Token() {
		t.Fatalf("server lease %+v", row)
	}
}
