package fencing_test

import (
	"errors"
	"testing"

	fencing "github.com/pgfencing/fencing/clients/go"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A pool registers the codec on each connection with AfterConnect; a token
// set by WithToken does not stay on the pooled connection (one connection:
// the next write through the pool is on the same one, and refused).
func TestPool(t *testing.T) {
	cfg, err := pgxpool.ParseConfig("pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	cfg.AfterConnect = fencing.RegisterTypes
	pool, err := pgxpool.NewWithConfig(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	c := connect(t)
	table(t, c, "go_pool")
	var max int64
	if err := pool.QueryRow(ctx(t), "SELECT $1::fencing_token", fencing.MaxToken).Scan(&max); err != nil || max != fencing.MaxToken {
		t.Fatalf("token through the pool: %d, %v", max, err)
	}
	var pid1, pid2 int
	err = fencing.WithToken(ctx(t), pool, 80, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx(t), "SELECT pg_backend_pid()").Scan(&pid1); err != nil {
			return err
		}
		_, err := tx.Exec(ctx(t), "UPDATE go_pool SET qty = 1 WHERE id = 1")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx(t), "SELECT pg_backend_pid()").Scan(&pid2); err != nil || pid1 != pid2 {
		t.Fatalf("not the same pooled connection: %d, %d, %v", pid1, pid2, err)
	}
	_, err = pool.Exec(ctx(t), "UPDATE go_pool SET qty = 2 WHERE id = 1")
	if !errors.Is(fencing.Classify(err), fencing.ErrTokenRequired) {
		t.Errorf("write after WithToken on the same pooled connection: %v, want ErrTokenRequired", err)
	}
}
