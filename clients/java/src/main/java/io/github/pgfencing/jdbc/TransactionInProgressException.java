package io.github.pgfencing.jdbc;

import java.sql.SQLException;

/**
 * withToken or Lease.transaction was given a connection with autoCommit off, i.e. inside the
 * caller's transaction: refused before anything is sent, since the library never joins, commits
 * or rolls back a transaction it did not begin (SQLSTATE 25001, active SQL transaction).
 */
public final class TransactionInProgressException extends SQLException {
    private static final long serialVersionUID = 1L;

    public TransactionInProgressException(String message) {
        super(message, "25001");
    }
}
