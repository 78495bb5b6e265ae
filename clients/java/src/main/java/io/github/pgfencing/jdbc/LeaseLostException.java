package io.github.pgfencing.jdbc;

import java.sql.SQLException;
import java.util.List;

/**
 * The lease is lost: the server refused a renewal (REFUSED), no renewal was confirmed within
 * ttl - margin (EXPIRED), so it may have expired on the server, or another holder's acquire took
 * it over and ended a write under its token (TAKEOVER, see LeaseTakenOverException). Writing
 * under its token is refused here; the server fences regardless, this fails fast. Not a
 * LeaseClosedException.
 */
public class LeaseLostException extends SQLException {
    private static final long serialVersionUID = 2L;

    /** Why the lease was declared lost. */
    public enum Reason {
        REFUSED, EXPIRED, TAKEOVER;

        /** "refused", "expired" or "takeover", as the other libraries name it. */
        @Override
        public String toString() { return name().toLowerCase(java.util.Locale.ROOT); }
    }

    private final List<String> resources;
    private final long[] tokens;
    private final Reason reason;

    public LeaseLostException(String message, List<String> resources, long[] tokens, Reason reason, Throwable cause) {
        this(message, null, resources, tokens, reason, cause);
    }

    protected LeaseLostException(String message, String sqlState, List<String> resources, long[] tokens,
            Reason reason, Throwable cause) {
        super(message, sqlState, cause);
        this.resources = List.copyOf(resources);
        this.tokens = tokens.clone();
        this.reason = reason;
    }

    /** The resources, joined with ", " (one resource: its name). */
    public String getResource() { return String.join(", ", resources); }

    /** The first resource's token. */
    public long getToken() { return tokens[0]; }

    public List<String> getResources() { return resources; }

    public long[] getTokens() { return tokens.clone(); }

    public Reason getReason() { return reason; }
}
