package fencing

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/jackc/pgx/v4"
)

// LeaseOptions configures Acquire and AcquireAll.
type LeaseOptions struct {
	Holder    string        // who holds the lease, shown in fencing_leases; required
	TTL       time.Duration // lease length, renewed by the heartbeat; required, at least 10 ms
	Wait      time.Duration // how long to wait for a live lease to end; 0: try once
	Namespace string        // resource namespace; "" is 'default'
	// RenewEvery is the heartbeat's period (default TTL/3), varied by
	// ±Jitter of itself (default 0.2) so that holders do not renew in step.
	RenewEvery time.Duration
	Jitter     float64
	// Margin: the lease counts as lost when no renewal was confirmed by
	// the last one's start + TTL - Margin (default TTL/5), so the lost
	// signal fires before the server lets another holder in.
	Margin time.Duration
}

func (o *LeaseOptions) normalize() error {
	if o.Holder == "" {
		return errors.New("fencing: LeaseOptions.Holder is required")
	}
	if o.TTL < 10*time.Millisecond {
		return errors.New("fencing: LeaseOptions.TTL must be at least 10ms")
	}
	o.Namespace = namespaceOrDefault(o.Namespace)
	if o.RenewEvery <= 0 {
		o.RenewEvery = o.TTL / 3
	}
	if o.Jitter <= 0 || o.Jitter >= 1 {
		o.Jitter = 0.2
	}
	if o.Margin <= 0 {
		o.Margin = o.TTL / 5
	}
	if o.Margin >= o.TTL || o.RenewEvery >= o.TTL-o.Margin {
		return errors.New("fencing: LeaseOptions need RenewEvery < TTL - Margin")
	}
	return nil
}

// Lease is a held lease on one or more resources, with a heartbeat that renews
// it on a connection of its own. When a renewal is refused, or none is
// confirmed in time, the lease is lost: Lost() is closed, Context() is
// cancelled, Cause() is ErrLeaseLost (wrapping what happened), and every
// write through the lease refuses. Close releases it.
type Lease struct {
	opts      LeaseOptions
	config    *pgx.ConnConfig
	resources []string
	tokens    []int64

	connMu sync.Mutex // the lease's connection: heartbeat, release, Check
	conn   *pgx.Conn

	mu         sync.Mutex
	validUntil time.Time // last confirmed renewal's start + TTL - Margin
	lastErr    error     // the last renewal's error, for the cause
	cause      error

	ctx       context.Context
	cancel    context.CancelFunc
	lost      chan struct{}
	renewed   chan struct{}
	stop      chan struct{}
	done      sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Acquire takes the lease on resource (fencing_acquire), waiting up to
// opts.Wait (and no longer than ctx allows) for a live lease of another
// holder to end; ErrNotAcquired when it did not. A holder that already has
// the live lease gets its token back with the TTL extended. The heartbeat
// starts at once; defer lease.Close().
func Acquire(ctx context.Context, config *pgx.ConnConfig, resource string, opts LeaseOptions) (*Lease, error) {
	return acquire(ctx, config, []string{resource}, &opts, func(c *pgx.Conn, wait *string) ([]int64, error) {
		var token *int64 // fencing_token, scanned through the registered codec
		err := c.QueryRow(ctx, "SELECT fencing_acquire($1, $2, $3::pg_catalog.text::pg_catalog.interval, "+
			"$4::pg_catalog.text::pg_catalog.interval, $5)",
			resource, opts.Holder, interval(opts.TTL), wait, opts.Namespace).Scan(&token)
		if err != nil || token == nil {
			return nil, Classify(err)
		}
		return []int64{*token}, nil
	})
}

// AcquireAll takes the leases on every resource at once, or none
// (fencing_acquire_all; the server takes them in an order that cannot
// deadlock). Token() is the first resource's token, TokenFor(r) each one's.
// ErrUnsupported when the installed extension version lacks it.
func AcquireAll(ctx context.Context, config *pgx.ConnConfig, resources []string, opts LeaseOptions) (*Lease, error) {
	if len(resources) == 0 {
		return nil, errors.New("fencing: AcquireAll needs at least one resource")
	}
	return acquire(ctx, config, resources, &opts, func(c *pgx.Conn, wait *string) ([]int64, error) {
		var tokens []int64 // fencing_token[], scanned through the registered codec
		err := c.QueryRow(ctx, "SELECT fencing_acquire_all($1::pg_catalog.text[], $2, "+
			"$3::pg_catalog.text::pg_catalog.interval, $4::pg_catalog.text::pg_catalog.interval, $5)",
			resources, opts.Holder, interval(opts.TTL), wait, opts.Namespace).Scan(&tokens)
		if err != nil {
			return nil, unsupported(err, "fencing_acquire_all")
		}
		return tokens, nil
	})
}

type acquireFunc func(c *pgx.Conn, wait *string) ([]int64, error)

func acquire(ctx context.Context, config *pgx.ConnConfig, resources []string, opts *LeaseOptions,
	run acquireFunc) (*Lease, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	config = config.Copy() // the lease's own, reused to reconnect
	conn, err := Connect(ctx, config)
	if err != nil {
		return nil, err
	}
	var wait *string
	if opts.Wait > 0 {
		w := interval(opts.Wait)
		wait = &w
	}
	start := time.Now()
	tokens, err := run(conn, wait)
	if err == nil && len(tokens) != len(resources) {
		err = ErrNotAcquired // NULL: another holder's live lease
	}
	if err == nil && opts.Wait > 0 {
		// A waited grant came some time after start, unknown how long: the
		// TTL is counted from a renewal sent after it instead.
		start = time.Now()
		var ok *bool
		if ok, err = renewQuery(ctx, conn, resources, tokens, opts); err == nil && (ok == nil || !*ok) {
			err = fmt.Errorf("%w: the first renewal was refused", ErrLeaseLost)
		}
	}
	if err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return newLease(config, conn, resources, tokens, *opts, start), nil
}

func newLease(config *pgx.ConnConfig, conn *pgx.Conn, resources []string, tokens []int64,
	opts LeaseOptions, start time.Time) *Lease {
	l := &Lease{opts: opts, config: config, resources: resources, tokens: tokens, conn: conn,
		validUntil: start.Add(opts.TTL - opts.Margin),
		lost:       make(chan struct{}), renewed: make(chan struct{}, 1), stop: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.done.Add(2)
	go l.heartbeat()
	go l.watchdog()
	return l
}

// interval is d as a PostgreSQL interval literal.
func interval(d time.Duration) string { return fmt.Sprintf("%d microseconds", d.Microseconds()) }

// Token is the lease's token (the first resource's, for AcquireAll).
func (l *Lease) Token() int64 { return l.tokens[0] }

// Tokens are the tokens, in the order of Resources.
func (l *Lease) Tokens() []int64 { return append([]int64(nil), l.tokens...) }

// Resources are the leased resources.
func (l *Lease) Resources() []string { return append([]string(nil), l.resources...) }

// TokenFor is resource's token, or false when the lease does not hold it.
func (l *Lease) TokenFor(resource string) (int64, bool) {
	for i, r := range l.resources {
		if r == resource {
			return l.tokens[i], true
		}
	}
	return 0, false
}

// Lost is closed when the lease is lost (not on Close).
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Context is cancelled when the lease is lost or closed; Cause tells which.
// Run the work the lease protects under it.
func (l *Lease) Context() context.Context { return l.ctx }

// Cause is nil while the lease is held, then an error that errors.Is
// ErrLeaseLost or ErrLeaseClosed.
func (l *Lease) Cause() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cause
}

// Valid reports whether the lease is held and a renewal was confirmed
// recently enough; it marks the lease lost when the margin has passed,
// even if the watchdog has not run yet (after the process was paused).
func (l *Lease) Valid() bool { return l.check() == nil }

func (l *Lease) check() error {
	l.mu.Lock()
	cause, until, lastErr := l.cause, l.validUntil, l.lastErr
	l.mu.Unlock()
	if cause != nil {
		return cause
	}
	if !time.Now().Before(until) {
		why := "no renewal confirmed before TTL - margin"
		if lastErr != nil {
			why += "; the last one failed: " + lastErr.Error()
		}
		l.markLost(errors.New(why))
		return l.Cause()
	}
	return nil
}

func (l *Lease) markLost(why error) {
	l.finish(fmt.Errorf("%w: %v", ErrLeaseLost, why), true)
}

func (l *Lease) finish(cause error, lost bool) {
	l.mu.Lock()
	first := l.cause == nil
	if first {
		l.cause = cause
	}
	l.mu.Unlock()
	if first {
		if lost {
			close(l.lost)
		}
		l.cancel()
	}
}

// jittered is RenewEvery varied by ±Jitter.
func (l *Lease) jittered() time.Duration {
	f := 1 + l.opts.Jitter*(2*rand.Float64()-1)
	return time.Duration(float64(l.opts.RenewEvery) * f)
}

// watchdog marks the lease lost when validUntil passes without a renewal
// moving it: a renewal that hangs is not waited for.
func (l *Lease) watchdog() {
	defer l.done.Done()
	for {
		l.mu.Lock()
		until := l.validUntil
		l.mu.Unlock()
		if !l.pause(time.Until(until), l.renewed) || l.check() != nil {
			return
		}
	}
}

// pause waits d, or until wake (nil: never) fires; false when the lease was
// closed or lost meanwhile.
func (l *Lease) pause(d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-l.stop:
		return false
	case <-l.ctx.Done():
		return false
	case <-wake:
	case <-t.C:
	}
	return true
}

func (l *Lease) heartbeat() {
	defer l.done.Done()
	for {
		if !l.pause(l.jittered(), nil) || l.check() != nil {
			return
		}
		if err := l.renew(); err != nil {
			l.markLost(err)
			return
		}
	}
}

// renew runs one renewal, bounded by the time left; a connection error is
// not fatal (the next round reconnects), a refusal is.
func (l *Lease) renew() error {
	l.mu.Lock()
	until := l.validUntil
	l.mu.Unlock()
	ctx, cancel := context.WithDeadline(l.ctx, until)
	defer cancel()
	start := time.Now()
	var ok *bool
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		var err error
		ok, err = renewQuery(ctx, c, l.resources, l.tokens, &l.opts)
		return err
	})
	if err != nil {
		l.mu.Lock()
		l.lastErr = err
		l.mu.Unlock()
		return nil // retried next round; the watchdog bounds how long
	}
	if ok == nil || !*ok {
		return errors.New("renewal refused: the lease expired or another holder took it")
	}
	l.mu.Lock()
	if next := start.Add(l.opts.TTL - l.opts.Margin); next.After(l.validUntil) {
		l.validUntil = next
	}
	l.mu.Unlock()
	select {
	case l.renewed <- struct{}{}:
	default:
	}
	return nil
}

// renewQuery renews every lease of resources with its token for TTL: true
// when all were renewed.
func renewQuery(ctx context.Context, c *pgx.Conn, resources []string, tokens []int64, opts *LeaseOptions) (*bool, error) {
	var ok *bool
	err := c.QueryRow(ctx, `SELECT pg_catalog.bool_and(fencing_renew(r, t,
	        $3::pg_catalog.text::pg_catalog.interval, $4))
	   FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]),
	                   pg_catalog.unnest($2::pg_catalog.int8[])) AS u(r, t)`,
		resources, tokens, interval(opts.TTL), opts.Namespace).Scan(&ok)
	return ok, err
}

// withConn runs fn on the lease's connection, reconnecting a closed one.
func (l *Lease) withConn(ctx context.Context, fn func(*pgx.Conn) error) error {
	l.connMu.Lock()
	defer l.connMu.Unlock()
	if l.conn == nil || l.conn.IsClosed() {
		c, err := Connect(ctx, l.config)
		if err != nil {
			return err
		}
		l.conn = c
	}
	return fn(l.conn)
}

// Check asks the server whether the lease's tokens are all still current
// (fencing_check), before a side effect outside the database. It is a check,
// not a fence. False, without asking, once the lease is lost.
func (l *Lease) Check(ctx context.Context) (bool, error) {
	if l.check() != nil {
		return false, nil
	}
	all := true
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		for i, r := range l.resources {
			ok, err := Check(ctx, c, r, l.tokens[i], l.opts.Namespace)
			if err != nil {
				return err
			}
			all = all && ok
		}
		return nil
	})
	return all, err
}

// BeginFunc runs fn in a transaction under the lease's token (see
// WithToken). It refuses with the lease's cause (ErrLeaseLost) when the lease
// is lost before it starts or before it commits; the table's fence refuses a
// stale write on its own, with *StaleTokenError.
func (l *Lease) BeginFunc(ctx context.Context, db Beginner, fn func(pgx.Tx) error) error {
	if err := l.check(); err != nil {
		return err
	}
	return withToken(ctx, db, l.Token(), fn, l.check)
}

// FencedUpdate is FencedUpdate with the lease's token; ErrLeaseLost once lost.
func (l *Lease) FencedUpdate(ctx context.Context, q Querier, table string, key, changes interface{}) (int64, error) {
	if err := l.check(); err != nil {
		return 0, err
	}
	return FencedUpdate(ctx, q, table, l.Token(), key, changes)
}

// FencedUpdateResult is FencedUpdateResult with the lease's token.
func (l *Lease) FencedUpdateResult(ctx context.Context, q Querier, table string, key, changes interface{}) (FencedResult, error) {
	if err := l.check(); err != nil {
		return FencedResult{}, err
	}
	return FencedUpdateResult(ctx, q, table, l.Token(), key, changes)
}

// FencedDelete is FencedDelete with the lease's token; ErrLeaseLost once lost.
func (l *Lease) FencedDelete(ctx context.Context, q Querier, table string, key interface{}) (int64, error) {
	if err := l.check(); err != nil {
		return 0, err
	}
	return FencedDelete(ctx, q, table, l.Token(), key)
}

// FencedUpsert is FencedUpsert with the lease's token; ErrLeaseLost once lost.
func (l *Lease) FencedUpsert(ctx context.Context, q Querier, table string, row interface{}) (int64, error) {
	if err := l.check(); err != nil {
		return 0, err
	}
	return FencedUpsert(ctx, q, table, l.Token(), row)
}

// Close stops the heartbeat, releases a lease still held (fencing_release;
// a lost one is left to expire) and closes the lease's connection. It can be
// called more than once.
func (l *Lease) Close() error {
	l.closeOnce.Do(func() {
		held := l.check() == nil
		// Cancelling the context first ends a renewal in flight at once.
		close(l.stop)
		l.finish(ErrLeaseClosed, false)
		l.done.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if held {
			l.closeErr = l.withConn(ctx, func(c *pgx.Conn) error {
				_, err := c.Exec(ctx, `SELECT fencing_release(r, t, $3)
				   FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]),
		                  pg_catalog.unnest($2::pg_catalog.int8[])) AS u(r, t)`,
					l.resources, l.tokens, l.opts.Namespace)
				return err
			})
		}
		l.connMu.Lock()
		if l.conn != nil {
			l.conn.Close(ctx)
		}
		l.connMu.Unlock()
	})
	return l.closeErr
}
