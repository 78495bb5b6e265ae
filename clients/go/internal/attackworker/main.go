// Command attackworker is one worker of test/pooler/attack124.py's attack
// pass (ATTACK_WORKER, see test/pooler/attack-libs.sh): it takes turns on one
// lease through the pooler and writes under it, as attack124.py's Python
// worker does, until END_EPOCH, printing one event a line (token, write,
// lost, error). Its application connection uses QueryExecModeExec when
// ATTACK_PGBOUNCER is 118 (PgBouncer before 1.21), else pgx's default.
//
//	attackworker HOST PORT DBNAME USER RESOURCE WORKER TTL_SECONDS END_EPOCH
package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"time"

	fencing "github.com/pgfencing/fencing/clients/go"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func now() string { return fmt.Sprintf("%.3f", float64(time.Now().UnixMilli())/1000) }

func errorName(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return fmt.Sprintf("%T:%s", err, pgErr.Code)
	}
	return fmt.Sprintf("%T", err)
}

func main() {
	a := os.Args[1:]
	mode := ""
	if os.Getenv("ATTACK_PGBOUNCER") == "118" {
		mode = " default_query_exec_mode=exec"
	}
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%s dbname=%s user=%s%s", a[0], a[1], a[2], a[3], mode))
	if err != nil {
		panic(err)
	}
	ttlS, _ := strconv.ParseFloat(a[6], 64)
	endS, _ := strconv.ParseFloat(a[7], 64)
	ttl := time.Duration(ttlS * float64(time.Second))
	end := time.UnixMilli(int64(endS * 1000))
	for k := 1; time.Now().Before(end); k++ {
		round(cfg, a[4], fmt.Sprintf("w%s-%d", a[5], k), ttl, end)
		if rand.Intn(2) == 0 {
			time.Sleep(time.Duration(rand.Intn(1000)) * time.Millisecond)
		}
	}
}

// round: one acquisition and the writes under it, until lost or the end.
func round(cfg *pgx.ConnConfig, resource, holder string, ttl time.Duration, end time.Time) {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Println("error", errorName(err), now())
		time.Sleep(300 * time.Millisecond)
	}
	l, err := fencing.Acquire(ctx, cfg, resource, fencing.LeaseOptions{Holder: holder, TTL: ttl, Wait: 5 * time.Second})
	if err != nil {
		fail(err)
		return
	}
	defer l.Close()
	tok := l.Token()
	fmt.Println("token", tok, now())
	lost := func() {
		if e := l.LostError(); e != nil {
			fmt.Println("lost", tok, now(), e.Reason)
		}
	}
	app, err := fencing.Connect(ctx, cfg)
	if err != nil {
		lost()
		fail(err)
		return
	}
	defer app.Close(ctx)
	for time.Now().Before(end) && l.State() == fencing.StateHeld {
		var old int64
		err := l.BeginFunc(ctx, app, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "UPDATE atk_rows SET v = v + 1 WHERE id = 1"); err != nil {
				return err
			}
			return tx.QueryRow(ctx, "UPDATE atk_last SET tok = $1 FROM (SELECT tok FROM atk_last FOR UPDATE) o"+
				" RETURNING o.tok", tok).Scan(&old)
		})
		if err != nil {
			lost()
			fail(err)
			return
		}
		fmt.Println("write", tok, old)
		time.Sleep(50 * time.Millisecond)
	}
	lost()
}
