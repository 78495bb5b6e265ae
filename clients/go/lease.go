package fencing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// LeaseOptions configures Acquire and AcquireAll.
type LeaseOptions struct {
	Holder    string        // who holds the lease, shown in fencing_leases; "" is host:pid:random
	TTL       time.Duration // lease length, renewed by the heartbeat; 0 is 30 s; at least 10 ms
	Wait      time.Duration // how long to wait for a live lease to end; 0: try once
	Namespace string        // resource namespace; "" is 'default'
	// RenewEvery is the heartbeat's period (default TTL/3), varied by
	// ±Jitter of itself (default 0.2) so that holders do not renew in step.
	RenewEvery time.Duration
	Jitter     float64
	// Margin: the lease counts as lost when no renewal was confirmed by
	// the send time of the call that last set its expiry + TTL - Margin
	// (default max(TTL/5, 50 ms)), so the lost signal fires before the
	// server lets another holder in.
	Margin time.Duration
}

// LeaseState is what a lease can be used for: only a held lease writes.
type LeaseState string

// The states of a lease (CONTRACT.md section 1). Closed wins over lost.
const (
	StateHeld   LeaseState = "held"
	StateLost   LeaseState = "lost"
	StateClosed LeaseState = "closed"
)

// The reasons a lease was lost.
const (
	ReasonRefused = "refused" // the server refused a renewal
	ReasonExpired = "expired" // no renewal was confirmed within the safe time
	// ReasonTakeover: another holder's acquire ended a write under the
	// lease's token (TF003) before the lease was declared lost otherwise.
	ReasonTakeover = "takeover"
)

// LeaseLostError is why a lease was lost; errors.Is(err, ErrLeaseLost).
type LeaseLostError struct {
	Resources []string
	Tokens    []int64
	Reason    string // ReasonRefused, ReasonExpired or ReasonTakeover
	Detail    string
}

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("fencing: lease on %v (tokens %v) lost (%s): %s", e.Resources, e.Tokens, e.Reason, e.Detail)
}

// Is matches ErrLeaseLost.
func (e *LeaseLostError) Is(target error) bool { return target == ErrLeaseLost }

// LeaseClosedError is what a released or closed lease refuses with;
// errors.Is(err, ErrLeaseClosed).
type LeaseClosedError struct {
	Resources []string
	Tokens    []int64
}

func (e *LeaseClosedError) Error() string {
	return fmt.Sprintf("fencing: lease on %v (tokens %v) is closed", e.Resources, e.Tokens)
}

// Is matches ErrLeaseClosed.
func (e *LeaseClosedError) Is(target error) bool { return target == ErrLeaseClosed }

func defaultHolder() string {
	host, _ := os.Hostname()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))
}

func (o *LeaseOptions) normalize() error {
	if o.Holder == "" {
		o.Holder = defaultHolder()
	}
	if o.TTL == 0 {
		o.TTL = 30 * time.Second
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
		o.Margin = max(o.TTL/5, 50*time.Millisecond)
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
	validUntil time.Time // send time of the call that last set the expiry + TTL - Margin
	lastErr    error     // the last renewal's error, for the cause
	lostErr    *LeaseLostError
	closed     bool

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
	return acquire(ctx, config, []string{resource}, &opts, func(ctx context.Context, c *pgx.Conn, wait *string) ([]int64, error) {
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
	return acquire(ctx, config, resources, &opts, func(ctx context.Context, c *pgx.Conn, wait *string) ([]int64, error) {
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

type acquireFunc func(ctx context.Context, c *pgx.Conn, wait *string) ([]int64, error)

func acquire(ctx context.Context, config *pgx.ConnConfig, resources []string, opts *LeaseOptions,
	run acquireFunc) (*Lease, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	config = leaseConfig(config) // the lease's own, reused to reconnect
	// The acquire is bounded by its wait + 5 s; cancelled, it holds nothing.
	actx, cancel := context.WithTimeout(ctx, opts.Wait+5*time.Second)
	defer cancel()
	conn, err := Connect(actx, config)
	if err != nil {
		return nil, err
	}
	var wait *string
	if opts.Wait > 0 {
		w := interval(opts.Wait)
		wait = &w
	}
	start := time.Now()
	tokens, err := run(actx, conn, wait)
	if err == nil && len(tokens) != len(resources) {
		err = ErrNotAcquired // NULL: another holder's live lease
	}
	if err != nil && actx.Err() != nil && ctx.Err() == nil {
		err = fmt.Errorf("%w: the acquire was cancelled at its bound (wait + 5 s): %v", ErrNotAcquired, err)
	}
	if err == nil && (opts.Wait > 0 || time.Since(start) > opts.Margin/2) {
		// A slow grant came some time after start, unknown how long, and the
		// server counts its TTL from then: renew at once and count from that
		// renewal's send time. A renewal that fails on a connection error
		// leaves the base at start (early, never late); the heartbeat goes on.
		sent := time.Now()
		ok, rerr := renewQuery(actx, conn, resources, tokens, opts)
		switch {
		case rerr == nil && (ok == nil || !*ok):
			err = &LeaseLostError{Resources: resources, Tokens: tokens, Reason: ReasonRefused,
				Detail: "the renewal right after the grant was refused"}
		case rerr == nil:
			start = sent
		}
	}
	if err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return newLease(config, conn, resources, tokens, *opts, start), nil
}

// leaseConfig is a copy of config for the lease's own connection. It uses
// no named prepared statements (QueryExecModeExec: one round trip with the
// unnamed statement), so it is safe behind a transaction-mode pooler that
// does not track them, unless the caller chose a mode of its own.
func leaseConfig(config *pgx.ConnConfig) *pgx.ConnConfig {
	c := config.Copy()
	if c.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement || c.DefaultQueryExecMode == pgx.QueryExecModeCacheDescribe {
		c.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	return c
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

// Lost is closed when the lease is lost (not on Close or Release).
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Context is cancelled when the lease is lost or closed; Cause tells which.
// Run the work the lease protects under it.
func (l *Lease) Context() context.Context { return l.ctx }

// Cause is nil while the lease is held; then what writes through it refuse
// with: a *LeaseClosedError (errors.Is ErrLeaseClosed) once released or
// closed, which wins over loss, else a *LeaseLostError (ErrLeaseLost).
func (l *Lease) Cause() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.causeLocked()
}

func (l *Lease) causeLocked() error {
	if l.closed {
		return &LeaseClosedError{Resources: l.resources, Tokens: l.tokens}
	}
	if l.lostErr != nil {
		return l.lostErr
	}
	return nil
}

// LostError is why the lease was lost, or nil when it was not; it stays set
// after Close.
func (l *Lease) LostError() *LeaseLostError {
	l.check()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

// State is StateHeld, StateLost or StateClosed (closed wins over lost). It
// checks the deadline first, like every write through the lease.
func (l *Lease) State() LeaseState {
	l.check()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return StateClosed
	case l.lostErr != nil:
		return StateLost
	}
	return StateHeld
}

// Valid reports whether the lease is held and a renewal was confirmed
// recently enough; it marks the lease lost when the margin has passed,
// even if the watchdog has not run yet (after the process was paused).
func (l *Lease) Valid() bool { return l.check() == nil }

// check is nil while the lease is held, else the error writes refuse with.
// It declares the lease lost first when its deadline has passed.
func (l *Lease) check() error {
	l.mu.Lock()
	if cause := l.causeLocked(); cause != nil {
		l.mu.Unlock()
		return cause
	}
	until, lastErr := l.validUntil, l.lastErr
	l.mu.Unlock()
	if !time.Now().Before(until) {
		why := "no renewal confirmed within the safe time (TTL - margin)"
		if lastErr != nil {
			why += "; the last one failed: " + lastErr.Error()
		}
		l.markLost(ReasonExpired, why)
		return l.Cause()
	}
	return nil
}

// markLost declares the lease lost, once, unless it was closed first.
func (l *Lease) markLost(reason, why string) {
	l.mu.Lock()
	first := l.lostErr == nil && !l.closed
	if first {
		l.lostErr = &LeaseLostError{Resources: l.resources, Tokens: l.tokens, Reason: reason, Detail: why}
	}
	l.mu.Unlock()
	if first {
		close(l.lost)
		l.cancel()
	}
}

// jittered is RenewEvery varied by ±Jitter.
func (l *Lease) jittered(every time.Duration) time.Duration {
	f := 1 + l.opts.Jitter*(2*mrand.Float64()-1)
	return time.Duration(float64(every) * f)
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
	every := l.opts.RenewEvery
	for {
		if !l.pause(l.jittered(every), nil) || l.check() != nil {
			return
		}
		refused, err := l.renew()
		if refused {
			l.markLost(ReasonRefused, "the server refused the renewal: the lease expired or another holder took it")
			return
		}
		// A failed renewal is retried sooner, on a new connection, until
		// the watchdog's deadline.
		every = l.opts.RenewEvery
		if err != nil {
			every = l.opts.RenewEvery / 8
		}
	}
}

// renew runs one renewal, bounded by the safe time left: refused when the
// server said false; an error (connection, timeout) is retried.
func (l *Lease) renew() (refused bool, err error) {
	l.mu.Lock()
	until := l.validUntil
	l.mu.Unlock()
	ctx, cancel := context.WithDeadline(l.ctx, until)
	defer cancel()
	var sent time.Time
	var ok *bool
	err = l.withConn(ctx, func(c *pgx.Conn) error {
		var err error
		sent = time.Now() // after a reconnect: the renewal's own send time
		ok, err = renewQuery(ctx, c, l.resources, l.tokens, &l.opts)
		return err
	})
	if err != nil {
		l.mu.Lock()
		l.lastErr = err
		l.mu.Unlock()
		if ctx.Err() != nil {
			l.dropConn() // a cancelled statement may leave the connection mid-protocol
		}
		return false, err
	}
	if ok == nil || !*ok {
		return true, nil
	}
	l.mu.Lock()
	if next := sent.Add(l.opts.TTL - l.opts.Margin); next.After(l.validUntil) {
		l.validUntil = next
	}
	l.mu.Unlock()
	select {
	case l.renewed <- struct{}{}:
	default:
	}
	return false, nil
}

func (l *Lease) dropConn() {
	l.connMu.Lock()
	defer l.connMu.Unlock()
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		l.conn.Close(ctx)
		l.conn = nil
	}
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
// WithToken). It refuses with the lease's cause (ErrLeaseLost, or
// ErrLeaseClosed after Release/Close) when the lease is not held before it
// starts, and rolls back with it when the lease is not held before COMMIT;
// the table's fence refuses a stale write on its own, with *StaleTokenError.
func (l *Lease) BeginFunc(ctx context.Context, db Beginner, fn func(pgx.Tx) error) error {
	if err := l.check(); err != nil {
		return err
	}
	return l.takenOver(withToken(ctx, db, l.Token(), fn, l.check))
}

// takenOver turns the error of a write under the lease into a
// *LeaseTakenOverError when a takeover cut it off (CONTRACT.md section 4a):
// TF003, which declares the lease lost (ReasonTakeover) unless it already
// was; or 57P01 once the lease is lost (deadline checked first). 57P01 on a
// held lease is a plain shutdown or pg_terminate_backend(): err unchanged.
func (l *Lease) takenOver(err error) error {
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) {
		return err
	}
	switch pgErr.Code {
	case SQLStateTakenOver:
		l.markLost(ReasonTakeover, "another holder's acquire took the lease over and ended a write under its token")
	case SQLStateAdminShutdown:
		if !errors.Is(l.check(), ErrLeaseLost) {
			return err
		}
	default:
		return err
	}
	return &LeaseTakenOverError{Resources: l.resources, Tokens: l.tokens, SQLState: pgErr.Code, Err: err}
}

// FencedUpdate is FencedUpdate with the lease's token; ErrLeaseLost once lost.
func (l *Lease) FencedUpdate(ctx context.Context, q Querier, table string, key, changes any, opts ...FencedOption) (int64, error) {
	if err := l.check(); err != nil {
		return 0, err
	}
	n, err := FencedUpdate(ctx, q, table, l.Token(), key, changes, opts...)
	return n, l.takenOver(err)
}

// FencedUpdateResult is FencedUpdateResult with the lease's token.
func (l *Lease) FencedUpdateResult(ctx context.Context, q Querier, table string, key, changes interface{}) (FencedResult, error) {
	if err := l.check(); err != nil {
		return FencedResult{}, err
	}
	r, err := FencedUpdateResult(ctx, q, table, l.Token(), key, changes)
	return r, l.takenOver(err)
}

// FencedDelete is FencedDelete with the lease's token; ErrLeaseLost once lost.
func (l *Lease) FencedDelete(ctx context.Context, q Querier, table string, key any, opts ...FencedOption) (int64, error) {
	if err := l.check(); err != nil {
		return 0, err
	}
	n, err := FencedDelete(ctx, q, table, l.Token(), key, opts...)
	return n, l.takenOver(err)
}

// FencedUpsert is FencedUpsert with the lease's token; ErrLeaseLost once lost.
func (l *Lease) FencedUpsert(ctx context.Context, q Querier, table string, row any, opts ...FencedOption) (int64, error) {
	if err := l.check(); err != nil {
		return 0, err
	}
	n, err := FencedUpsert(ctx, q, table, l.Token(), row, opts...)
	return n, l.takenOver(err)
}

// Release stops the heartbeat (a renewal in flight is waited for, bounded by
// the safe time left), then sends fencing_release for the lease's tokens, bounded by
// max(TTL/3, 1 s); the lease is closed from then on, and a lost lease stays
// lost too (no lost signal fires). True when the server ended a live lease;
// false for a lost lease whose successor holds it, a second Release, or an
// error (the server then ends the lease at its TTL, and err says why).
func (l *Lease) Release() (bool, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false, nil
	}
	l.closed = true
	l.mu.Unlock()
	// A renewal in flight is waited for (bounded by the safe time left), not
	// cancelled: it may be about to extend the lease this release ends.
	close(l.stop)
	l.done.Wait()
	l.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), max(l.opts.TTL/3, time.Second))
	defer cancel()
	var released int
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT pg_catalog.count(*) FILTER (WHERE fencing_release(r, t, $3))
		   FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]),
		                   pg_catalog.unnest($2::pg_catalog.int8[])) AS u(r, t)`,
			l.resources, l.tokens, l.opts.Namespace).Scan(&released)
	})
	return err == nil && released > 0, err
}

// Close releases the lease (see Release) unless that was done, and closes
// the lease's connection. It can be called more than once; the error is the
// release's, the first time.
func (l *Lease) Close() error {
	l.closeOnce.Do(func() {
		_, l.closeErr = l.Release()
		l.connMu.Lock()
		if l.conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			l.conn.Close(ctx)
			cancel()
			l.conn = nil
		}
		l.connMu.Unlock()
	})
	return l.closeErr
}
