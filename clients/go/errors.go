package fencing

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATEs of the extension's refusals.
const (
	SQLStateStaleToken    = "TF001"
	SQLStateTokenRequired = "TF002"
	// SQLStateTakenOver: the server ended the backend because another
	// holder's fencing_acquire took over the lease it wrote under (1.6,
	// with the library in shared_preload_libraries).
	SQLStateTakenOver = "TF003"
	// SQLStateAdminShutdown: PostgreSQL's admin_shutdown, what a takeover
	// sends without the preloaded library (and a shutdown or
	// pg_terminate_backend() always).
	SQLStateAdminShutdown = "57P01"
)

var (
	// ErrStaleToken matches every *StaleTokenError with errors.Is.
	ErrStaleToken = errors.New("fencing: stale token")
	// ErrTokenRequired is a write refused without a token (TF002): a table that
	// requires one, a token set for the session instead of the transaction, a
	// deleted key written back without one. errors.Is matches it; errors.As
	// to *pgconn.PgError gives the server's message.
	ErrTokenRequired = errors.New("fencing: token required")
	// ErrLeaseLost is the cause of a lost lease: a renewal refused, or none
	// confirmed before the safety margin ahead of the TTL. Writes through the
	// lease refuse with it.
	ErrLeaseLost = errors.New("fencing: lease lost")
	// ErrLeaseClosed: the lease was released or closed; writes through it
	// refuse with a *LeaseClosedError that errors.Is this. Not ErrLeaseLost.
	ErrLeaseClosed = errors.New("fencing: lease closed")
	// ErrLeaseTakenOver: a write under the lease was cut off by a takeover
	// (a *LeaseTakenOverError, which errors.Is ErrLeaseLost too).
	ErrLeaseTakenOver = errors.New("fencing: lease taken over")
	// ErrTransactionInProgress: WithToken or BeginFunc was given a
	// transaction, or a connection inside one; nothing was sent.
	ErrTransactionInProgress = errors.New("fencing: a transaction is already open on this connection")
	// ErrTransactionAborted: the helper's COMMIT was answered with ROLLBACK.
	ErrTransactionAborted = errors.New("fencing: the transaction was aborted and rolled back")
	// ErrNotAcquired is returned by Acquire and AcquireAll when another
	// holder kept the resource for the whole wait.
	ErrNotAcquired = errors.New("fencing: not acquired")
	// ErrUnsupported is a feature whose SQL objects the installed extension
	// version lacks (ALTER EXTENSION fencing UPDATE).
	ErrUnsupported = errors.New("fencing: not supported by the installed extension version")
	// ErrExtensionTooOld is ErrUnsupported under the contract's name.
	ErrExtensionTooOld = ErrUnsupported
)

// StaleTokenError is a write refused with TF001: the offered token is below
// the high-water mark of the row, resource or table (or, in strict mode, not
// above it). The fields come from the error's own fields; Key, Offered and HWM
// from its DETAIL. Another holder has fenced this one: re-acquire, re-read,
// then write.
type StaleTokenError struct {
	SchemaName string // the protected table's schema
	TableName  string // the protected table
	Key        string // what was fenced, as DETAIL says it: `Key (id)=(5)`, `Resource "r1"` ...
	Offered    int64  // the token the write carried
	HWM        int64  // the high-water mark it was judged against
	Strict     bool   // refused because equal to the HWM, in strict mode
	Parsed     bool   // Key, Offered and HWM were read from DETAIL
	Written    int64  // rows the same Fenced* call wrote (a key that is not the whole primary key)
	PgErr      *pgconn.PgError
}

func (e *StaleTokenError) Error() string {
	if !e.Parsed {
		return "fencing: " + e.PgErr.Message
	}
	return fmt.Sprintf("fencing: stale token %d for %s.%s (%s): high-water mark %d",
		e.Offered, e.SchemaName, e.TableName, e.Key, e.HWM)
}

// Unwrap gives the *pgconn.PgError.
func (e *StaleTokenError) Unwrap() error { return e.PgErr }

// Is matches ErrStaleToken.
func (e *StaleTokenError) Is(target error) bool { return target == ErrStaleToken }

// TokenRequiredError is a TF002 refusal; errors.Is(err, ErrTokenRequired).
type TokenRequiredError struct {
	SchemaName string
	TableName  string
	PgErr      *pgconn.PgError
}

func (e *TokenRequiredError) Error() string { return "fencing: " + e.PgErr.Message }

// Unwrap gives the *pgconn.PgError.
func (e *TokenRequiredError) Unwrap() error { return e.PgErr }

// Is matches ErrTokenRequired.
func (e *TokenRequiredError) Is(target error) bool { return target == ErrTokenRequired }

// TF001's DETAIL ends "offered token N is below the high-water mark M." or,
// strict, "... is not above the high-water mark M (strict: ...)."; the key
// text before it may contain anything, so the pattern is anchored at the end
// and the key is what precedes its last match.
var staleDetail = regexp.MustCompile(`(?s)^(.*): offered token (\d+) is (below|not above) ` +
	`the high-water mark (\d+)( \(strict[^)]*\))?\.$`)

// Classify turns the extension's refusals into typed errors: a TF001
// *pgconn.PgError anywhere in err's chain into *StaleTokenError, TF002 into
// *TokenRequiredError. Anything else is returned unchanged, nil as nil.
func Classify(err error) error {
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) {
		return err
	}
	switch pgErr.Code {
	case SQLStateStaleToken:
		return staleTokenError(pgErr)
	case SQLStateTokenRequired:
		return &TokenRequiredError{SchemaName: pgErr.SchemaName, TableName: pgErr.TableName, PgErr: pgErr}
	}
	return err
}

func staleTokenError(pgErr *pgconn.PgError) *StaleTokenError {
	e := &StaleTokenError{SchemaName: pgErr.SchemaName, TableName: pgErr.TableName, PgErr: pgErr}
	m := staleDetail.FindStringSubmatch(pgErr.Detail)
	if m == nil {
		return e
	}
	offered, err1 := strconv.ParseInt(m[2], 10, 64)
	hwm, err2 := strconv.ParseInt(m[4], 10, 64)
	if err1 != nil || err2 != nil {
		return e
	}
	e.Key, e.Offered, e.HWM, e.Strict, e.Parsed = m[1], offered, hwm, m[3] == "not above", true
	return e
}

// LeaseTakenOverError is a write under a lease cut off by a takeover:
// another holder's fencing_acquire ended its backend (TF003, or 57P01 once
// the lease was lost; CONTRACT.md section 4a); the write rolled back.
// errors.Is matches ErrLeaseTakenOver and ErrLeaseLost; errors.As gives a
// *LeaseLostError with ReasonTakeover, and the *pgconn.PgError (Unwrap).
type LeaseTakenOverError struct {
	Resources []string
	Tokens    []int64
	SQLState  string // TF003 or 57P01
	Err       error  // the driver's error
}

func (e *LeaseTakenOverError) Error() string {
	return fmt.Sprintf("fencing: lease on %v (tokens %v) taken over: the server ended the write (%s): %v",
		e.Resources, e.Tokens, e.SQLState, e.Err)
}

// Unwrap gives the driver's error.
func (e *LeaseTakenOverError) Unwrap() error { return e.Err }

// Is matches ErrLeaseTakenOver and ErrLeaseLost.
func (e *LeaseTakenOverError) Is(target error) bool {
	return target == ErrLeaseTakenOver || target == ErrLeaseLost
}

// As gives a *LeaseLostError (ReasonTakeover) to code that handles lost leases.
func (e *LeaseTakenOverError) As(target any) bool {
	p, ok := target.(**LeaseLostError)
	if ok {
		*p = &LeaseLostError{Resources: e.Resources, Tokens: e.Tokens, Reason: ReasonTakeover, Detail: e.Error()}
	}
	return ok
}
