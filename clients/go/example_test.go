package fencing_test

import (
	"context"
	"errors"
	"log"
	"time"

	fencing "github.com/pgfencing/fencing/clients/go"

	"github.com/jackc/pgx/v5"
)

// A worker that holds a lease while it writes, and stops when it loses it.
// (Compiled by go test; run it against a database with the extension.)
func Example() {
	ctx := context.Background()
	cfg, err := pgx.ParseConfig("") // PG* environment variables
	if err != nil {
		log.Fatal(err)
	}
	db, err := fencing.Connect(ctx, cfg) // registers fencing_token as int8
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close(ctx)

	lease, err := fencing.Acquire(ctx, cfg, "orders-sync",
		fencing.LeaseOptions{Holder: "worker-1", TTL: 10 * time.Second, Wait: 30 * time.Second})
	if errors.Is(err, fencing.ErrNotAcquired) {
		return // another worker has it
	}
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Close() // releases it

	for lease.Context().Err() == nil {
		err := lease.BeginFunc(lease.Context(), db, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "UPDATE orders SET state = 'synced' WHERE id = $1", 42)
			return err
		})
		var stale *fencing.StaleTokenError
		switch {
		case errors.As(err, &stale):
			log.Printf("fenced off: %s.%s %s, token %d < %d", stale.SchemaName, stale.TableName,
				stale.Key, stale.Offered, stale.HWM)
			return
		case errors.Is(err, fencing.ErrLeaseLost):
			log.Printf("lease lost: %v", lease.Cause())
			return
		case err != nil:
			log.Fatal(err)
		}
		time.Sleep(time.Second)
	}
}
