package io.github.pgfencing.jdbc;

import java.sql.SQLException;
import java.util.List;

/**
 * The lease was released or closed: nothing starts or commits under it any more. Not a
 * LeaseLostException (a lease that was lost and then closed reports both: isLost() stays true).
 */
public final class LeaseClosedException extends SQLException {
    private static final long serialVersionUID = 1L;
    private final List<String> resources;
    private final long[] tokens;

    public LeaseClosedException(String message, List<String> resources, long[] tokens) {
        super(message);
        this.resources = List.copyOf(resources);
        this.tokens = tokens == null ? new long[0] : tokens.clone();
    }

    public List<String> getResources() { return resources; }

    public long[] getTokens() { return tokens.clone(); }
}
