package io.github.pgfencing.jdbc;

import java.sql.SQLException;
import java.util.List;

/**
 * A write under the lease was cut off by a takeover: another holder's fencing_acquire ended its
 * backend (SQLSTATE TF003; or 57P01 once the lease was already lost, CONTRACT.md section 4a); the
 * write rolled back. A LeaseLostException with reason TAKEOVER, so code catching
 * LeaseLostException still catches it; getSQLState() is the server's code, getCause() the
 * driver's exception.
 */
public final class LeaseTakenOverException extends LeaseLostException {
    private static final long serialVersionUID = 1L;

    public LeaseTakenOverException(String message, String sqlState, List<String> resources, long[] tokens,
            SQLException cause) {
        super(message, sqlState, resources, tokens, Reason.TAKEOVER, cause);
    }
}
