package fencing

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// MaxToken is the largest fencing token, 2^63 - 1.
const MaxToken int64 = 9223372036854775807

// RegisterTypes registers the fencing_token type (and fencing_token[]) of
// the database conn is connected to as int8, so a token scans into an int64
// (or *int64, pgtype.Int8) and an int64 binds as a token, in the text and
// the binary format. Its OID differs per database, so it is looked up here:
// call it once per connection, e.g. as pgxpool.Config.AfterConnect, whose
// signature it has. Connect does it for you. The lookup runs in whatever
// query exec mode the connection is configured with, and leaves no state on
// the server connection.
func RegisterTypes(ctx context.Context, conn *pgx.Conn) error {
	var oid, arrayOID uint32
	err := conn.QueryRow(ctx, `SELECT t.oid, t.typarray
	    FROM pg_catalog.pg_type t
	    JOIN pg_catalog.pg_extension e ON e.extnamespace OPERATOR(pg_catalog.=) t.typnamespace
	   WHERE e.extname OPERATOR(pg_catalog.=) 'fencing'
	     AND t.typname OPERATOR(pg_catalog.=) 'fencing_token'`).Scan(&oid, &arrayOID)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("fencing: the extension is not installed in this database (CREATE EXTENSION fencing)")
	}
	if err != nil {
		return fmt.Errorf("fencing: looking up the fencing_token type: %w", err)
	}
	tm := conn.TypeMap()
	token := &pgtype.Type{Name: "fencing_token", OID: oid, Codec: pgtype.Int8Codec{}}
	tm.RegisterType(token)
	if arrayOID != 0 {
		tm.RegisterType(&pgtype.Type{Name: "_fencing_token", OID: arrayOID,
			Codec: &pgtype.ArrayCodec{ElementType: token}})
	}
	return nil
}

// Connect opens a connection and registers the fencing_token type on it.
func Connect(ctx context.Context, config *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, config)
	if err != nil {
		return nil, err
	}
	if err := RegisterTypes(ctx, conn); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	return conn, nil
}
