package io.github.pgfencing.jdbc;

import java.sql.SQLException;

/** TF002: a protected table was written without a transaction-local token. */
public final class TokenRequiredException extends SQLException {
    private static final long serialVersionUID = 1L;

    public TokenRequiredException(String message, Throwable cause) {
        super(message, "TF002", cause);
    }
}
