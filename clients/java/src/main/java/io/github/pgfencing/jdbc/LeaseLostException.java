package fencing.jdbc;

import java.sql.SQLException;

/**
 * The lease is lost, or its renewals failed long enough that it may have expired: writing
 * under its token is refused here. The server fences regardless; this fails fast.
 */
public final class LeaseLostException extends SQLException {
    private static final long serialVersionUID = 1L;
    private final String resource;
    private final long token;

    public LeaseLostException(String message, String resource, long token, Throwable cause) {
        super(message, null, cause);
        this.resource = resource;
        this.token = token;
    }

    public String getResource() { return resource; }

    public long getToken() { return token; }
}
