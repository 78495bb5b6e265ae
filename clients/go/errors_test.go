package fencing_test

import (
	"errors"
	"testing"

	fencing "github.com/pgfencing/fencing/clients/go"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5"
)

// The DETAIL parser reads key, offered token and HWM from the end, so a key
// value that looks like a DETAIL cannot fool it.
func TestClassifyDetail(t *testing.T) {
	cases := []struct {
		detail         string
		key            string
		offered, hwm   int64
		strict, parsed bool
	}{
		{"Key (id)=(5): offered token 3 is below the high-water mark 7.", "Key (id)=(5)", 3, 7, false, true},
		{"Key (id)=(x: offered token 1 is below the high-water mark 2.): offered token 9223372036854775806 is below the high-water mark 9223372036854775807.",
			"Key (id)=(x: offered token 1 is below the high-water mark 2.)", 9223372036854775806, fencing.MaxToken, false, true},
		{"Key (id)=(1): offered token 7 is not above the high-water mark 7 (strict: a token is admitted to one transaction only).",
			"Key (id)=(1)", 7, 7, true, true},
		{"something else", "", 0, 0, false, false},
	}
	for _, c := range cases {
		err := fencing.Classify(&pgconn.PgError{Code: "TF001", Detail: c.detail, SchemaName: "s", TableName: "t"})
		var stale *fencing.StaleTokenError
		if !errors.As(err, &stale) || !errors.Is(err, fencing.ErrStaleToken) {
			t.Fatalf("%q: %T %v", c.detail, err, err)
		}
		if stale.Key != c.key || stale.Offered != c.offered || stale.HWM != c.hwm || stale.Strict != c.strict ||
			stale.Parsed != c.parsed || stale.SchemaName != "s" || stale.TableName != "t" {
			t.Errorf("%q: %+v", c.detail, stale)
		}
	}
	if err := fencing.Classify(&pgconn.PgError{Code: "23505"}); errors.Is(err, fencing.ErrStaleToken) {
		t.Error("23505 classified as stale")
	}
}

// A stale write from the server itself, both modes: the typed error with its
// fields; errors.As to *pgconn.PgError still works through it.
func TestStaleFromServer(t *testing.T) {
	c := connect(t)
	for _, strict := range []bool{false, true} {
		name := map[bool]string{false: "go_stale", true: "go_stale_strict"}[strict]
		table(t, c, name)
		if strict {
			run(t, c, "SELECT fencing_protect('"+name+"', strict => true)")
		}
		write := func(token int64) error {
			return fencing.WithToken(ctx(t), c, token, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx(t), "UPDATE "+name+" SET qty = qty + 1 WHERE id = 1")
				return err
			})
		}
		if err := write(50); err != nil {
			t.Fatal(err)
		}
		offered := int64(40)
		if strict {
			offered = 50
		}
		err := write(offered)
		var stale *fencing.StaleTokenError
		var pgErr *pgconn.PgError
		if !errors.As(err, &stale) || !errors.As(err, &pgErr) || pgErr.Code != "TF001" {
			t.Fatalf("%s: %T %v", name, err, err)
		}
		if stale.SchemaName != "public" || stale.TableName != name || stale.Key != "Key (id)=(1)" ||
			stale.Offered != offered || stale.HWM != 50 || stale.Strict != strict {
			t.Errorf("%s: %+v", name, stale)
		}
	}
}
