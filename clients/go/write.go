package fencing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5"
)

// Beginner starts a transaction: *pgx.Conn, *pgxpool.Pool and *pgxpool.Conn
// are. (A pgx.Tx is one too, but WithToken refuses it: it never joins a
// transaction that is already open.)
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Querier runs one statement: *pgx.Conn, *pgxpool.Pool, *pgxpool.Conn, pgx.Tx.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// WithToken runs fn in a transaction whose every write carries token: BEGIN;
// SET LOCAL fencing.token; fn(tx); COMMIT. The token lives as long as the
// transaction, so it can neither stay on a pooled connection nor be missing
// from a write fn makes. fn's error, or a failed commit, rolls back; errors
// come back through Classify (*StaleTokenError, *TokenRequiredError). A
// COMMIT that the server answered with ROLLBACK (a statement of fn failed and
// fn swallowed its error) is ErrTransactionAborted. db inside a transaction
// (a pgx.Tx, or a connection whose transaction is open) is refused with
// ErrTransactionInProgress before anything is sent: the caller's transaction
// is never joined, committed or rolled back here.
func WithToken(ctx context.Context, db Beginner, token int64, fn func(pgx.Tx) error) error {
	return withToken(ctx, db, token, fn, nil)
}

// withToken is WithToken with a check run before the commit: a non-nil error
// from it rolls back instead.
func withToken(ctx context.Context, db Beginner, token int64, fn func(pgx.Tx) error,
	beforeCommit func() error) (err error) {
	if token < 0 {
		return fmt.Errorf("fencing: token %d out of range", token)
	}
	if err := refuseOpenTransaction(db); err != nil {
		return err
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return Classify(err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(ctx)
		}
	}()
	if _, err = tx.Exec(ctx, setLocalToken(token)); err != nil {
		return Classify(err)
	}
	if err = fn(tx); err != nil {
		return Classify(err)
	}
	if beforeCommit != nil {
		if err = beforeCommit(); err != nil {
			return err
		}
	}
	if err = tx.Commit(ctx); errors.Is(err, pgx.ErrTxCommitRollback) {
		return fmt.Errorf("%w: a statement of the transaction failed and its error was not returned; "+
			"the server rolled the transaction back at COMMIT", ErrTransactionAborted)
	}
	return Classify(err)
}

// setLocalToken is the statement that sets token for the transaction: a
// literal SET LOCAL, because Citus forwards SET LOCAL to its workers (with
// citus.propagate_set_commands = 'local') and never set_config(). SET takes
// no parameters, so the value is formatted from the int64; Exec without
// arguments uses the simple protocol, so nothing is prepared per token value.
func setLocalToken(token int64) string {
	return "SET LOCAL fencing.token = '" + strconv.FormatInt(token, 10) + "'"
}

// refuseOpenTransaction: ErrTransactionInProgress for a pgx.Tx, or for a
// connection whose transaction is open (in it, or failed).
func refuseOpenTransaction(db Beginner) error {
	if _, ok := db.(pgx.Tx); ok {
		return fmt.Errorf("%w: given a pgx.Tx", ErrTransactionInProgress)
	}
	if c, ok := db.(interface{ PgConn() *pgconn.PgConn }); ok && c.PgConn().TxStatus() != 'I' {
		return fmt.Errorf("%w: the connection's transaction status is %q", ErrTransactionInProgress,
			c.PgConn().TxStatus())
	}
	return nil
}

// FencedOption changes what a Fenced* call does.
type FencedOption func(*fencedOptions)

type fencedOptions struct{ keepStale bool }

// WithoutStaleError makes a Fenced* call return the rows written, 0 for a
// stale row too, instead of a *StaleTokenError.
func WithoutStaleError() FencedOption { return func(o *fencedOptions) { o.keepStale = true } }

// FencedUpdate calls fenced_update_result(table, token, key, changes): UPDATE
// table SET changes WHERE key, fenced by token. key and changes are
// marshalled to JSON objects (a map, a struct, json.RawMessage). It returns
// the rows written; a row refused as stale (its high-water mark above the
// token) is a *StaleTokenError (with the rows the call wrote in Written), so
// 0 without an error means no row matched the key. It runs in autocommit or
// in q's transaction. Extension 1.5 or later (ErrUnsupported before).
func FencedUpdate(ctx context.Context, q Querier, table string, token int64, key, changes any, opts ...FencedOption) (int64, error) {
	return fencedCall(ctx, q, "fenced_update_result", table, token, opts, key, changes)
}

// FencedDelete calls fenced_delete_result(table, token, key); as FencedUpdate.
func FencedDelete(ctx context.Context, q Querier, table string, token int64, key any, opts ...FencedOption) (int64, error) {
	return fencedCall(ctx, q, "fenced_delete_result", table, token, opts, key)
}

// FencedUpsert calls fenced_upsert_result(table, token, row): INSERT ... ON
// CONFLICT (primary key) DO UPDATE where the token allows; as FencedUpdate,
// the stale error's Key is the whole row.
func FencedUpsert(ctx context.Context, q Querier, table string, token int64, row any, opts ...FencedOption) (int64, error) {
	return fencedCall(ctx, q, "fenced_upsert_result", table, token, opts, row)
}

func fencedCall(ctx context.Context, q Querier, fn, table string, token int64, opts []FencedOption, objects ...any) (int64, error) {
	var o fencedOptions
	for _, opt := range opts {
		opt(&o)
	}
	res, err := fencedResultCall(ctx, q, fn, table, token, objects...)
	if err != nil {
		return 0, err
	}
	if o.keepStale {
		return res.Written, nil
	}
	return res.Written, res.Err()
}

// fencedSQL is the call fn(table, token, objects as jsonb...) and its arguments.
func fencedSQL(fn, table string, token int64, objects []interface{}) (string, []interface{}, error) {
	args := []interface{}{table, token}
	params := "$1::pg_catalog.text::pg_catalog.regclass, $2::pg_catalog.int8"
	for i, o := range objects {
		b, err := json.Marshal(o)
		if err != nil {
			return "", nil, fmt.Errorf("fencing: %s argument %d: %w", fn, i+3, err)
		}
		args = append(args, string(b))
		params += fmt.Sprintf(", $%d::pg_catalog.text::pg_catalog.jsonb", i+3)
	}
	return fn + "(" + params + ")", args, nil
}

// Check calls fencing_check(resource, token, namespace): whether token is
// still the current one for resource. Use it before a side effect outside the
// database (an email, a call to another service); it is a check, not a
// fence: the lease can be lost right after it answers true. A write to a
// protected table needs no check: the table fences it. namespace "" is
// 'default'.
func Check(ctx context.Context, q Querier, resource string, token int64, namespace string) (bool, error) {
	var ok *bool
	err := q.QueryRow(ctx, "SELECT fencing_check($1, $2::pg_catalog.int8, $3)",
		resource, token, namespaceOrDefault(namespace)).Scan(&ok)
	if err != nil {
		return false, unsupported(err, "fencing_check")
	}
	return ok != nil && *ok, nil
}

func namespaceOrDefault(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

// unsupported maps "no such function" (42883) for a function of a newer
// extension version to ErrUnsupported.
func unsupported(err error, fn string) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42883" {
		return fmt.Errorf("%w: %s (ALTER EXTENSION fencing UPDATE): %v", ErrUnsupported, fn, err)
	}
	return Classify(err)
}

// FencedResult is what a fenced_*_result() call did: rows written, rows
// refused as stale, and the highest HWM that refused one. It tells a stale
// token (Stale > 0) from a key that matched no row (both 0).
type FencedResult struct {
	Written int64
	Stale   int64
	HWM     *int64 // nil when no row was stale

	table string
	token int64
	key   string
}

// Err is a *StaleTokenError when a row was refused as stale, else nil.
// Its Key is the key argument as JSON, SchemaName empty and TableName the
// table argument as given: the call's result, unlike an error, carries no
// such fields.
func (r FencedResult) Err() error {
	if r.Stale == 0 || r.HWM == nil {
		return nil
	}
	// A mark equal to the token refused a row only in strict mode.
	return &StaleTokenError{TableName: r.table, Key: r.key, Offered: r.token, HWM: *r.HWM, Written: r.Written,
		Strict: *r.HWM == r.token, Parsed: true,
		PgErr: &pgconn.PgError{Code: SQLStateStaleToken,
			Message: fmt.Sprintf("stale fencing token for table %s", r.table)}}
}

// FencedUpdateResult calls fenced_update_result(table, token, key, changes).
// ErrUnsupported before extension version 1.5.
func FencedUpdateResult(ctx context.Context, q Querier, table string, token int64, key, changes interface{}) (FencedResult, error) {
	return fencedResultCall(ctx, q, "fenced_update_result", table, token, key, changes)
}

// FencedDeleteResult calls fenced_delete_result(table, token, key).
func FencedDeleteResult(ctx context.Context, q Querier, table string, token int64, key interface{}) (FencedResult, error) {
	return fencedResultCall(ctx, q, "fenced_delete_result", table, token, key)
}

// FencedUpsertResult calls fenced_upsert_result(table, token, row); the
// stale error's Key is the whole row.
func FencedUpsertResult(ctx context.Context, q Querier, table string, token int64, row interface{}) (FencedResult, error) {
	return fencedResultCall(ctx, q, "fenced_upsert_result", table, token, row)
}

func fencedResultCall(ctx context.Context, q Querier, fn, table string, token int64, objects ...interface{}) (FencedResult, error) {
	sql, args, err := fencedSQL(fn, table, token, objects)
	if err != nil {
		return FencedResult{}, err
	}
	res := FencedResult{table: table, token: token, key: args[2].(string)}
	err = q.QueryRow(ctx, "SELECT written, stale, hwm FROM "+sql, args...).Scan(&res.Written, &res.Stale, &res.HWM)
	if err != nil {
		return FencedResult{}, unsupported(err, fn)
	}
	return res, nil
}
