package fencing_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	fencing "github.com/pgfencing/fencing/clients/go"

	"github.com/jackc/pgx/v5"
)

// The child process of TestPause runs holder() instead of the tests.
func TestMain(m *testing.M) {
	if r := os.Getenv("FENCING_GO_HOLDER"); r != "" {
		os.Exit(holder(r))
	}
	os.Exit(m.Run())
}

// holder acquires resource, says its token, and on "write" from stdin
// reports whether the lease was lost, then writes through the lease
// (BeginFunc) and with the bare token (WithToken), and says what each did.
func holder(resource string) int {
	ctx := context.Background()
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	conn, err := fencing.Connect(ctx, cfg)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	l, err := fencing.Acquire(ctx, cfg, resource, fencing.LeaseOptions{Holder: "paused", TTL: time.Second})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer l.Close()
	fmt.Println("token", l.Token())
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "write" {
		return 1
	}
	select {
	case <-l.Lost():
		fmt.Println("lost", errors.Is(l.Cause(), fencing.ErrLeaseLost), l.Context().Err() != nil)
	case <-time.After(time.Second):
		fmt.Println("not-lost")
	}
	update := func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE go_pause SET qty = -1 WHERE id = 1")
		return err
	}
	fmt.Println("lease-write", errors.Is(l.BeginFunc(ctx, conn, update), fencing.ErrLeaseLost))
	err = fencing.WithToken(ctx, conn, l.Token(), update)
	var stale *fencing.StaleTokenError
	if errors.As(err, &stale) {
		fmt.Printf("stale %s %s %d %d %s\n", stale.SchemaName, stale.TableName, stale.Offered, stale.HWM, stale.Key)
	} else {
		fmt.Println("write", err)
	}
	return 0
}

// A real pause: the holder, a child process, is stopped (SIGSTOP) past its
// TTL; another holder acquires and writes; the holder is continued. Its lost
// signal has fired, its write through the lease refuses with ErrLeaseLost,
// and its late write with the old token is refused by the table with a
// *StaleTokenError naming table, key, its token and the new HWM.
func TestPause(t *testing.T) {
	c := connect(t)
	table(t, c, "go_pause")
	r := resource(t)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "FENCING_GO_HOLDER="+r)
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	out := bufio.NewScanner(stdout)
	line := func() string {
		if !out.Scan() {
			t.Fatalf("holder ended: %v", out.Err())
		}
		return out.Text()
	}
	first := strings.Fields(line())
	if len(first) != 2 || first[0] != "token" {
		t.Fatalf("holder said %v", first)
	}
	old, _ := strconv.ParseInt(first[1], 10, 64)

	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the 1 s TTL
	b, err := fencing.Acquire(ctx(t), config(t), r, fencing.LeaseOptions{Holder: "next", TTL: 5 * time.Second})
	if err != nil {
		child.Process.Signal(syscall.SIGCONT)
		t.Fatalf("the next holder: %v", err)
	}
	defer b.Close()
	err = b.BeginFunc(ctx(t), c, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx(t), "UPDATE go_pause SET qty = 1 WHERE id = 1")
		return err
	})
	if err != nil {
		t.Fatalf("the next holder's write: %v", err)
	}
	if err := child.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	fmt.Fprintln(stdin, "write")

	if got := line(); got != "lost true true" {
		t.Errorf("after the pause the holder said %q, want the lost signal", got)
	}
	if got := line(); got != "lease-write true" {
		t.Errorf("the write through the lost lease: %q, want ErrLeaseLost", got)
	}
	want := fmt.Sprintf("stale public go_pause %d %d Key (id)=(1)", old, b.Token())
	if got := line(); got != want {
		t.Errorf("the late write: %q, want %q", got, want)
	}
	var qty int
	if err := c.QueryRow(ctx(t), "SELECT qty FROM go_pause WHERE id = 1").Scan(&qty); err != nil || qty != 1 {
		t.Errorf("qty %d (%v), want the next holder's 1", qty, err)
	}
	child.Wait()
}
