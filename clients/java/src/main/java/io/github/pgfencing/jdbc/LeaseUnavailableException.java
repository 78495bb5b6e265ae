package io.github.pgfencing.jdbc;

import java.sql.SQLException;

/** Another holder's lease stayed live for the whole wait (SQLSTATE 55P03, lock not available). */
public final class LeaseUnavailableException extends SQLException {
    private static final long serialVersionUID = 1L;

    public LeaseUnavailableException(String message) {
        super(message, "55P03");
    }
}
