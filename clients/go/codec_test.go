package fencing_test

import (
	"context"
	"testing"

	fencing "github.com/pgfencing/fencing/clients/go"

	"github.com/jackc/pgx/v5"
)

// A token scans into int64 and binds from one, exact at the maximum, in the
// binary format (pgx's default for registered types), the text result format
// and the simple protocol (text both ways).
func TestCodecMaxToken(t *testing.T) {
	c := connect(t)
	modes := []struct {
		name   string
		opts   []interface{}
		format int16
	}{
		{"binary", nil, pgx.BinaryFormatCode},
		{"text result format", []interface{}{pgx.QueryResultFormats{pgx.TextFormatCode}}, pgx.TextFormatCode},
		{"simple protocol", []interface{}{pgx.QueryExecModeSimpleProtocol}, pgx.TextFormatCode},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			for _, want := range []int64{0, 1, 34, 4294967296, fencing.MaxToken} {
				args := append(append([]interface{}{}, m.opts...), want)
				rows, err := c.Query(ctx(t), "SELECT $1::fencing_token, '9223372036854775807'::fencing_token", args...)
				if err != nil {
					t.Fatal(err)
				}
				var got, max int64
				if !rows.Next() {
					t.Fatalf("no row: %v", rows.Err())
				}
				if f := rows.FieldDescriptions()[0].Format; f != m.format {
					t.Errorf("result format %d, want %d", f, m.format)
				}
				if err := rows.Scan(&got, &max); err != nil {
					t.Fatalf("scan %d: %v", want, err)
				}
				rows.Close()
				if got != want || max != fencing.MaxToken {
					t.Errorf("got %d and %d, want %d and %d", got, max, want, fencing.MaxToken)
				}
			}
		})
	}
}

// The maximum token written through SET LOCAL and read back from the table.
func TestCodecMaxTokenInTable(t *testing.T) {
	c := connect(t)
	table(t, c, "go_max")
	err := fencing.WithToken(ctx(t), c, fencing.MaxToken, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx(t), "UPDATE go_max SET qty = 1 WHERE id = 1")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var fence, hwm int64
	if err := c.QueryRow(ctx(t), "SELECT fence, fencing_high_water('go_max', '{\"id\": 1}') FROM go_max").Scan(&fence, &hwm); err != nil {
		t.Fatal(err)
	}
	if fence != fencing.MaxToken || hwm != fencing.MaxToken {
		t.Errorf("fence %d, hwm %d, want %d", fence, hwm, fencing.MaxToken)
	}
}

// Without RegisterTypes pgx v5 asks for a value of the unknown type in text
// and still scans it into int64 (and fencing_token[] into []int64); with it,
// tokens travel in the binary format, as int8 does.
func TestCodecWithAndWithoutRegistration(t *testing.T) {
	c, err := pgx.ConnectConfig(ctx(t), config(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	format := func() (int16, int64, []int64) {
		t.Helper()
		rows, err := c.Query(ctx(t), "SELECT 34::fencing_token, ARRAY[35]::fencing_token[]")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var v int64
		var arr []int64
		if !rows.Next() {
			t.Fatal(rows.Err())
		}
		f := rows.FieldDescriptions()[0].Format
		if err := rows.Scan(&v, &arr); err != nil {
			t.Fatal(err)
		}
		return f, v, arr
	}
	if f, v, arr := format(); f != pgx.TextFormatCode || v != 34 || len(arr) != 1 || arr[0] != 35 {
		t.Errorf("without registration: format %d, %d, %v", f, v, arr)
	}
	if err := fencing.RegisterTypes(ctx(t), c); err != nil {
		t.Fatal(err)
	}
	if f, v, arr := format(); f != pgx.BinaryFormatCode || v != 34 || len(arr) != 1 || arr[0] != 35 {
		t.Errorf("after RegisterTypes: format %d, %d, %v", f, v, arr)
	}
}

// fencing_token[] scans into []int64.
func TestCodecArray(t *testing.T) {
	c := connect(t)
	var got []int64
	if err := c.QueryRow(ctx(t), "SELECT ARRAY[1, 9223372036854775807]::fencing_token[]").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != fencing.MaxToken {
		t.Fatalf("got %v", got)
	}
}
