// Runs the cases of test/pooler/batches/README.md with pgx v5.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// outcome is "ok" or the SQLSTATE of err.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return "error:" + strings.ReplaceAll(err.Error(), " ", "_")
}

func runCase(ctx context.Context, cfg *pgx.ConnConfig, load bool, spec string) (string, error) {
	lines := strings.Split(spec, "\n")
	shape, stmts := lines[0], lines[1:]
	if shape == "batch-cache" {
		// pgx's default: named prepared statements, prepared (Parse, Describe)
		// before a Sync of their own, then executed before one Sync.
		cfg = cfg.Copy()
		cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if load {
		if _, err := conn.Exec(ctx, "LOAD 'fencing'"); err != nil {
			return "", err
		}
	}
	switch shape {
	case "batch", "batch-cache":
		b := &pgx.Batch{}
		for _, s := range stmts {
			b.Queue(s)
		}
		br := conn.SendBatch(ctx, b)
		var first error
		for range stmts {
			if _, err := br.Exec(); err != nil && first == nil {
				first = err
			}
		}
		if err := br.Close(); err != nil && first == nil {
			first = err
		}
		return outcome(first), nil
	case "multi":
		_, err := conn.Exec(ctx, strings.Join(stmts, "; "))
		return outcome(err), nil
	case "each":
		var got []string
		for _, s := range stmts {
			_, err := conn.Exec(ctx, s)
			got = append(got, outcome(err))
		}
		return strings.Join(got, " "), nil
	}
	return "", fmt.Errorf("unknown shape %q", shape)
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: batch CONNINFO LOAD CASE...")
		os.Exit(2)
	}
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Unnamed statements only, as a pool in transaction or statement mode needs.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	for _, spec := range os.Args[3:] {
		got, err := runCase(ctx, cfg, os.Args[2] == "1", spec)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(got)
	}
}
