package fencing_test

import (
	"errors"
	"testing"
	"time"

	fencing "github.com/pgfencing/fencing/clients/go"
)

// AcquireAll: all resources or none, each with its token, renewed by one
// heartbeat, released by Close. Without fencing_acquire_all in the installed
// version: ErrUnsupported.
func TestAcquireAll(t *testing.T) {
	c := connect(t)
	r1, r2 := resource(t), resource(t)
	opts := fencing.LeaseOptions{Holder: "a", TTL: time.Second}
	if !hasFunction(t, c, "fencing_acquire_all") {
		t.Run("before 1.5: ErrUnsupported", func(t *testing.T) {
			_, err := fencing.AcquireAll(ctx(t), config(t), []string{r1, r2}, opts)
			if !errors.Is(err, fencing.ErrUnsupported) {
				t.Fatalf("without fencing_acquire_all: %v, want ErrUnsupported", err)
			}
		})
		return
	}
	l, err := fencing.AcquireAll(ctx(t), config(t), []string{r1, r2}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	t1, _ := l.TokenFor(r1)
	t2, _ := l.TokenFor(r2)
	if len(l.Tokens()) != 2 || t1 <= 0 || t2 <= 0 || l.Token() != t1 {
		t.Fatalf("tokens %v", l.Tokens())
	}
	time.Sleep(3 * opts.TTL)
	for _, r := range []string{r1, r2} {
		if row := serverLease(t, c, r); !row.live {
			t.Errorf("%s after 3 TTLs: %+v", r, row)
		}
	}
	// One of them taken: none acquired.
	other := acquire(t, resource(t), "b", 5*time.Second)
	_, err = fencing.AcquireAll(ctx(t), config(t), []string{other.Resources()[0], r1 + "-free"}, fencing.LeaseOptions{Holder: "c", TTL: time.Second})
	if !errors.Is(err, fencing.ErrNotAcquired) {
		t.Errorf("with one resource held: %v", err)
	}
	if serverLeaseOrNone(t, r1+"-free") {
		t.Errorf("the free resource was leased by a failed AcquireAll")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{r1, r2} {
		if row := serverLease(t, c, r); row.live {
			t.Errorf("%s after Close: %+v", r, row)
		}
	}
}

// Check: true for the live token, false for an older one; Lease.Check false
// once lost. Without fencing_check: ErrUnsupported.
func TestCheck(t *testing.T) {
	c := connect(t)
	r := resource(t)
	l := acquire(t, r, "a", 5*time.Second)
	if !hasFunction(t, c, "fencing_check") {
		t.Run("before 1.5: ErrUnsupported", func(t *testing.T) {
			_, err := fencing.Check(ctx(t), c, r, l.Token(), "")
			if !errors.Is(err, fencing.ErrUnsupported) {
				t.Fatalf("without fencing_check: %v, want ErrUnsupported", err)
			}
		})
		return
	}
	ok, err := fencing.Check(ctx(t), c, r, l.Token(), "")
	if err != nil || !ok {
		t.Fatalf("current token: %v, %v", ok, err)
	}
	if ok, err = l.Check(ctx(t)); err != nil || !ok {
		t.Fatalf("Lease.Check: %v, %v", ok, err)
	}
	if ok, err = fencing.Check(ctx(t), c, r, l.Token()-1, ""); err != nil || ok {
		t.Fatalf("older token: %v, %v", ok, err)
	}
	l.Close()
	b := acquire(t, r, "b", 5*time.Second)
	if ok, err = fencing.Check(ctx(t), c, r, l.Token(), ""); err != nil || ok {
		t.Fatalf("superseded token: %v, %v", ok, err)
	}
	if ok, err = b.Check(ctx(t)); err != nil || !ok {
		t.Fatalf("the new holder: %v, %v", ok, err)
	}
}

func serverLeaseOrNone(t *testing.T, r string) bool {
	conn := connect(t)
	var n int
	if err := conn.QueryRow(ctx(t), "SELECT count(*) FROM fencing_leases WHERE resource = $1 AND live", r).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}
