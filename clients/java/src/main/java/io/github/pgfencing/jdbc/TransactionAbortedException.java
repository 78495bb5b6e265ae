package io.github.pgfencing.jdbc;

import java.sql.SQLException;

/**
 * A statement of the work failed while the work went on (its SQLException caught): the
 * transaction was aborted, so its COMMIT would have been a ROLLBACK. Rolled back; nothing of it
 * committed (SQLSTATE 25P02).
 */
public final class TransactionAbortedException extends SQLException {
    private static final long serialVersionUID = 1L;

    public TransactionAbortedException(String message) {
        super(message, "25P02");
    }
}
