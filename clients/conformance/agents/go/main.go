// The conformance agent for the Go library (pgx v5): the line protocol of
// clients/conformance/PROTOCOL.md on stdin/stdout.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	fencing "github.com/pgfencing/fencing/clients/go"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var out = struct {
	sync.Mutex
	w *bufio.Writer
}{w: bufio.NewWriter(os.Stdout)}

func emit(m map[string]any) {
	b, _ := json.Marshal(m)
	out.Lock()
	defer out.Unlock()
	out.w.Write(append(b, '\n'))
	out.w.Flush()
}

func epoch(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

type agent struct {
	ctx    context.Context
	cfg    *pgx.ConnConfig
	app    *pgx.Conn
	leases map[string]*fencing.Lease
}

func (a *agent) reconnect(map[string]any) (map[string]any, error) {
	if a.app != nil {
		a.app.Close(a.ctx)
	}
	c, err := fencing.Connect(a.ctx, a.cfg)
	if err != nil {
		return nil, err
	}
	a.app = c
	return map[string]any{}, nil
}

func (a *agent) hello(map[string]any) (map[string]any, error) {
	driver := "pgx v5"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/jackc/pgx/v5" {
				driver = "pgx " + d.Version
			}
		}
	}
	return map[string]any{"lang": "go", "library": "github.com/pgfencing/fencing/clients/go",
		"driver": driver, "pid": os.Getpid()}, nil
}

func ms(m map[string]any, k string) time.Duration {
	if v, ok := m[k].(float64); ok {
		return time.Duration(v * float64(time.Millisecond))
	}
	return 0
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func (a *agent) lease(m map[string]any) (*fencing.Lease, error) {
	l, ok := a.leases[str(m, "lease")]
	if !ok {
		return nil, fmt.Errorf("usage: no lease %q", str(m, "lease"))
	}
	return l, nil
}

func (a *agent) acquire(m map[string]any) (map[string]any, error) {
	name := str(m, "lease")
	opts := fencing.LeaseOptions{Holder: str(m, "holder"), TTL: ms(m, "ttl_ms"), Wait: ms(m, "wait_ms"),
		Namespace: str(m, "namespace"), RenewEvery: ms(m, "renew_every_ms"), Margin: ms(m, "margin_ms")}
	sent := time.Now()
	l, err := fencing.Acquire(a.ctx, a.cfg, str(m, "resource"), opts)
	if err != nil {
		return nil, err
	}
	a.leases[name] = l
	go func() {
		<-l.Lost()
		at := time.Now()
		reason := ""
		if e := l.LostError(); e != nil {
			reason = e.Reason
		}
		emit(map[string]any{"event": "lost", "lease": name, "reason": reason, "at": epoch(at),
			"token": strconv.FormatInt(l.Token(), 10)})
	}()
	return map[string]any{"token": strconv.FormatInt(l.Token(), 10), "sent_at": epoch(sent),
		"returned_at": epoch(time.Now())}, nil
}

func (a *agent) state(m map[string]any) (map[string]any, error) {
	l, err := a.lease(m)
	if err != nil {
		return nil, err
	}
	st := l.State()
	var reason any
	lost := l.LostError()
	if lost != nil {
		reason = lost.Reason
	}
	return map[string]any{"state": string(st), "lost": lost != nil, "closed": st == fencing.StateClosed,
		"reason": reason, "token": strconv.FormatInt(l.Token(), 10)}, nil
}

func (a *agent) write(m map[string]any) (map[string]any, error) {
	l, err := a.lease(m)
	if err != nil {
		return nil, err
	}
	var rows int64
	err = l.BeginFunc(a.ctx, a.app, func(tx pgx.Tx) error {
		tag, err := tx.Exec(a.ctx, "UPDATE "+pgx.Identifier{str(m, "table")}.Sanitize()+
			" SET v = $1, n = n + 1 WHERE id = $2", str(m, "value"), int(m["row"].(float64)))
		if err != nil {
			return err
		}
		rows = tag.RowsAffected()
		time.Sleep(ms(m, "hold_ms"))
		if d := ms(m, "hold_server_ms"); d > 0 {
			_, err = tx.Exec(a.ctx, "SELECT pg_sleep($1)", d.Seconds())
		}
		return err
	})
	return map[string]any{"rows": rows}, err
}

func (a *agent) fencedUpdate(m map[string]any) (map[string]any, error) {
	key := map[string]any{"id": int(m["row"].(float64))}
	changes := map[string]any{"v": str(m, "value")}
	var n int64
	var err error
	if _, ok := m["lease"]; ok {
		l, lerr := a.lease(m)
		if lerr != nil {
			return nil, lerr
		}
		n, err = l.FencedUpdate(a.ctx, a.app, str(m, "table"), key, changes)
	} else {
		token, perr := strconv.ParseInt(str(m, "token"), 10, 64)
		if perr != nil {
			return nil, fmt.Errorf("usage: token %q", str(m, "token"))
		}
		n, err = fencing.FencedUpdate(a.ctx, a.app, str(m, "table"), token, key, changes)
	}
	return map[string]any{"rows": n}, err
}

func (a *agent) release(m map[string]any) (map[string]any, error) {
	l, err := a.lease(m)
	if err != nil {
		return nil, err
	}
	released, _ := l.Release() // an error is a false release, as the contract says
	return map[string]any{"released": released}, nil
}

func (a *agent) close(m map[string]any) (map[string]any, error) {
	l, err := a.lease(m)
	if err != nil {
		return nil, err
	}
	released, _ := l.Release()
	l.Close()
	return map[string]any{"released": released}, nil
}

func errorOf(err error) map[string]any {
	kind := "Other"
	var sqlstate any
	fields := map[string]any{}
	var stale *fencing.StaleTokenError
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, fencing.ErrLeaseTakenOver):
		kind = "LeaseTakenOver"
	case errors.Is(err, fencing.ErrLeaseLost):
		kind = "LeaseLost"
	case errors.Is(err, fencing.ErrLeaseClosed):
		kind = "LeaseClosed"
	case errors.Is(err, fencing.ErrNotAcquired):
		kind = "LeaseNotAcquired"
	case errors.As(err, &stale):
		kind = "StaleToken"
		fields = map[string]any{"schema": stale.SchemaName, "table": stale.TableName, "key": stale.Key,
			"offered": strconv.FormatInt(stale.Offered, 10), "hwm": strconv.FormatInt(stale.HWM, 10),
			"strict": stale.Strict}
	case errors.Is(err, fencing.ErrTokenRequired):
		kind = "TokenRequired"
	case errors.Is(err, fencing.ErrTransactionAborted):
		kind = "TransactionAborted"
	case errors.Is(err, fencing.ErrTransactionInProgress):
		kind = "TransactionInProgress"
	case errors.Is(err, fencing.ErrUnsupported):
		kind = "ExtensionTooOld"
	case errors.As(err, &pgErr):
		kind = "Database"
	}
	if errors.As(err, &pgErr) {
		sqlstate = pgErr.Code
	}
	if kind == "Other" && len(err.Error()) > 6 && err.Error()[:6] == "usage:" {
		kind = "Usage"
	}
	return map[string]any{"kind": kind, "sqlstate": sqlstate, "message": err.Error(), "fields": fields}
}

func main() {
	ctx := context.Background()
	cfg, err := pgx.ParseConfig("") // PGHOST, PGPORT, PGUSER, PGDATABASE
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	a := &agent{ctx: ctx, cfg: cfg, leases: map[string]*fencing.Lease{}}
	if _, err := a.reconnect(nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmds := map[string]func(map[string]any) (map[string]any, error){
		"hello": a.hello, "acquire": a.acquire, "state": a.state, "write": a.write,
		"fenced_update": a.fencedUpdate, "release": a.release, "close": a.close, "reconnect": a.reconnect,
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var m map[string]any
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "bad request:", err)
			continue
		}
		id := m["id"]
		cmd := str(m, "cmd")
		if cmd == "quit" {
			emit(map[string]any{"id": id, "ok": true})
			break
		}
		f, ok := cmds[cmd]
		if !ok {
			emit(map[string]any{"id": id, "ok": false, "error": map[string]any{"kind": "Usage",
				"sqlstate": nil, "message": "unknown command " + cmd, "fields": map[string]any{}}})
			continue
		}
		res, err := f(m)
		if err != nil {
			emit(map[string]any{"id": id, "ok": false, "error": errorOf(err)})
			continue
		}
		res["id"], res["ok"] = id, true
		emit(res)
	}
	for _, l := range a.leases {
		l.Close()
	}
	os.Exit(0)
}
