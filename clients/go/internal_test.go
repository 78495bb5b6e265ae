package fencing

import (
	"testing"
	"time"
)

// Renewal periods vary within ±Jitter of RenewEvery, and do vary.
func TestJitter(t *testing.T) {
	o := LeaseOptions{Holder: "h", TTL: 3 * time.Second}
	if err := o.normalize(); err != nil {
		t.Fatal(err)
	}
	l := &Lease{opts: o}
	lo, hi := time.Duration(float64(o.RenewEvery)*0.8), time.Duration(float64(o.RenewEvery)*1.2)
	seen := map[time.Duration]bool{}
	for i := 0; i < 1000; i++ {
		d := l.jittered()
		if d < lo || d > hi {
			t.Fatalf("period %v outside [%v, %v]", d, lo, hi)
		}
		seen[d] = true
	}
	if len(seen) < 100 {
		t.Errorf("only %d distinct periods in 1000", len(seen))
	}
}

// Options that would renew too late to beat the TTL are refused.
func TestOptionsRefused(t *testing.T) {
	for _, o := range []LeaseOptions{
		{TTL: time.Second},
		{Holder: "h"},
		{Holder: "h", TTL: time.Second, RenewEvery: 900 * time.Millisecond},
		{Holder: "h", TTL: time.Second, Margin: time.Second},
	} {
		if err := o.normalize(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
