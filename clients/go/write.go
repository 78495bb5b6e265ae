package fencing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
)

// Beginner starts a transaction: *pgx.Conn, pgxpool.Pool, pgx.Tx (a
// savepoint) all are.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Querier runs one statement: *pgx.Conn, pgxpool.Pool, pgx.Tx.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...interface{}) pgx.Row
}

// WithToken runs fn in a transaction whose every write carries token: BEGIN;
// SET LOCAL fencing.token; fn(tx); COMMIT. The token lives as long as the
// transaction, so it can neither stay on a pooled connection nor be missing
// from a write fn makes. fn's error, or a failed commit, rolls back; errors
// come back through Classify (*StaleTokenError, *TokenRequiredError).
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
	tx, err := db.Begin(ctx)
	if err != nil {
		return Classify(err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(ctx)
		}
	}()
	// set_config(..., true) is SET LOCAL, with the token as a parameter.
	if _, err = tx.Exec(ctx, "SELECT pg_catalog.set_config('fencing.token', $1, true)",
		strconv.FormatInt(token, 10)); err != nil {
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
	return Classify(tx.Commit(ctx))
}

// FencedUpdate calls fenced_update(table, token, key, changes): UPDATE table
// SET changes WHERE key, fenced by token. key and changes are marshalled to
// JSON objects (a map, a struct, json.RawMessage). It returns the rows
// written: 0 when no row matched the key or the row's high-water mark is above
// token (the function skips stale rows), and runs in autocommit or in q's
// transaction.
func FencedUpdate(ctx context.Context, q Querier, table string, token int64, key, changes interface{}) (int64, error) {
	return fencedCall(ctx, q, "fenced_update", table, token, key, changes)
}

// FencedDelete calls fenced_delete(table, token, key).
func FencedDelete(ctx context.Context, q Querier, table string, token int64, key interface{}) (int64, error) {
	return fencedCall(ctx, q, "fenced_delete", table, token, key)
}

// FencedUpsert calls fenced_upsert(table, token, row): INSERT ... ON CONFLICT
// (primary key) DO UPDATE where the token allows.
func FencedUpsert(ctx context.Context, q Querier, table string, token int64, row interface{}) (int64, error) {
	return fencedCall(ctx, q, "fenced_upsert", table, token, row)
}

func fencedCall(ctx context.Context, q Querier, fn, table string, token int64, objects ...interface{}) (int64, error) {
	args := []interface{}{table, token}
	params := "$1::pg_catalog.text::pg_catalog.regclass, $2::pg_catalog.int8"
	for i, o := range objects {
		b, err := json.Marshal(o)
		if err != nil {
			return 0, fmt.Errorf("fencing: %s argument %d: %w", fn, i+3, err)
		}
		args = append(args, string(b))
		params += fmt.Sprintf(", $%d::pg_catalog.text::pg_catalog.jsonb", i+3)
	}
	var n int64
	err := q.QueryRow(ctx, "SELECT "+fn+"("+params+")", args...).Scan(&n)
	return n, Classify(err)
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
