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
		d := l.jittered(o.RenewEvery)
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
		{Holder: "h", TTL: 5 * time.Millisecond},
		{Holder: "h", TTL: time.Second, RenewEvery: 900 * time.Millisecond},
		{Holder: "h", TTL: time.Second, Margin: time.Second},
	} {
		if err := o.normalize(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// The contract's defaults: TTL 30 s, holder host:pid:random, renew every
// TTL/3, margin max(TTL/5, 50 ms).
func TestOptionDefaults(t *testing.T) {
	o := LeaseOptions{}
	if err := o.normalize(); err != nil {
		t.Fatal(err)
	}
	if o.TTL != 30*time.Second || o.RenewEvery != 10*time.Second || o.Margin != 6*time.Second || o.Holder == "" {
		t.Errorf("defaults %+v", o)
	}
	short := LeaseOptions{TTL: 200 * time.Millisecond}
	if err := short.normalize(); err != nil || short.Margin != 50*time.Millisecond {
		t.Errorf("margin for a 200 ms TTL: %v, %v", short.Margin, err)
	}
}
