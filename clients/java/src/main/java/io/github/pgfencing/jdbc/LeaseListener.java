package io.github.pgfencing.jdbc;

import java.sql.SQLException;

/** Callbacks from a lease's renewal thread. Keep them short: they run on the scheduler. */
public interface LeaseListener {
    /** The lease is lost, or will have expired before another renewal could land. Called once. */
    void leaseLost(Lease lease, LeaseLostException reason);

    /** A renewal failed with an error; the lease is retried until its safety deadline. */
    default void renewalFailed(Lease lease, SQLException error) {}
}
