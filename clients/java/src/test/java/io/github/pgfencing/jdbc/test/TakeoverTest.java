package io.github.pgfencing.jdbc.test;

import io.github.pgfencing.jdbc.Fencing;
import io.github.pgfencing.jdbc.Lease;
import io.github.pgfencing.jdbc.LeaseLostException;
import io.github.pgfencing.jdbc.LeaseTakenOverException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Takeover (CONTRACT.md section 4a): a write under a lease cut off by another holder's acquire.
 * The suite's cluster does not preload the library, so the server sends 57P01; TF003 is checked
 * end to end by the conformance suite. Uses TestMain's harness.
 */
final class TakeoverTest {
    private TakeoverTest() {}

    static void run(Connection admin) throws Exception {
        afterLost(admin);
        terminatedWhileHeld(admin);
    }

    /** A table of resource scope with row 1 on resource r: a takeover ends its writers only. */
    private static void resourceTable(Connection admin, String t, String r) throws SQLException {
        TestMain.exec(admin, "DROP TABLE IF EXISTS " + t);
        TestMain.exec(admin, "CREATE TABLE " + t + " (id int PRIMARY KEY, res text NOT NULL, v text, fence fencing_token)");
        TestMain.exec(admin, "SELECT fencing_protect(?::regclass, scope => 'resource', resource_column => 'res')", t);
        Fencing.withToken(admin, 1, c -> {
            TestMain.exec(c, "INSERT INTO " + t + " VALUES (1, ?, 'a')", r);
            return null;
        });
    }

    /** A write under the lease that sleeps in the server after its UPDATE; completes with its exception. */
    private static CompletableFuture<Throwable> writeSleeping(Connection admin, Lease lease, String t) throws Exception {
        Connection app = TestMain.connect(new Properties());
        CompletableFuture<Throwable> done = CompletableFuture.supplyAsync(() -> {
            try {
                lease.transaction(app, c -> {
                    TestMain.exec(c, "UPDATE " + t + " SET v = 'cut-off' WHERE id = 1");
                    TestMain.exec(c, "SELECT pg_sleep(10)");
                    return null;
                });
                return null;
            } catch (Throwable e) {
                return e;
            } finally {
                try {
                    app.close();
                } catch (SQLException ignored) {
                    // ended by the server
                }
            }
        });
        for (int i = 0; i < 250; i++) {
            if (!"0".equals(TestMain.one(admin, "SELECT count(*) FROM pg_stat_activity "
                    + "WHERE query LIKE 'SELECT pg_sleep%' AND state = 'active'")))
                break;
            Thread.sleep(20);
        }
        return done;
    }

    /**
     * Released behind the holder's back; once a renewal saw it (REFUSED), another holder's
     * acquire ends the write (57P01): LeaseTakenOverException, a LeaseLostException; the lost
     * reason stays REFUSED; nothing committed.
     */
    private static void afterLost(Connection admin) throws Exception {
        String r = "tk-lost-" + ProcessHandle.current().pid();
        resourceTable(admin, "tk_lost", r);
        try (Lease lease = Lease.builder(TestMain.source()).resource(r).holder("a").ttl(Duration.ofSeconds(3)).acquire()) {
            CompletableFuture<Throwable> done = writeSleeping(admin, lease, "tk_lost");
            TestMain.exec(admin, "SELECT fencing_release(?, ?::text::fencing_token)", r, Long.toString(lease.token()));
            lease.lost().handle((x, y) -> null).get(3, TimeUnit.SECONDS);
            String tok2 = TestMain.one(admin, "SELECT fencing_acquire(?, 'other', '30 s', '5 s')::text", r);
            Throwable e = done.get(15, TimeUnit.SECONDS);
            String row = TestMain.one(admin, "SELECT v FROM tk_lost WHERE id = 1");
            TestMain.ok(tok2 != null && e instanceof LeaseTakenOverException && e instanceof LeaseLostException
                    && "57P01".equals(((SQLException) e).getSQLState())
                    && ((LeaseLostException) e).getReason() == LeaseLostException.Reason.TAKEOVER
                    && lease.lostReason().getReason() == LeaseLostException.Reason.REFUSED && "a".equals(row),
                    "takeover: a write ended (57P01) after the lease was lost is LeaseTakenOverException; the lost "
                    + "reason stays REFUSED; nothing committed (" + tok2 + ", " + e + ", " + row + ")");
        }
    }

    /** pg_terminate_backend (57P01, as a shutdown) of a held lease's write: the driver's error, still held. */
    private static void terminatedWhileHeld(Connection admin) throws Exception {
        String r = "tk-held-" + ProcessHandle.current().pid();
        resourceTable(admin, "tk_held", r);
        try (Lease lease = Lease.builder(TestMain.source()).resource(r).holder("a").ttl(Duration.ofSeconds(3)).acquire()) {
            CompletableFuture<Throwable> done = writeSleeping(admin, lease, "tk_held");
            TestMain.exec(admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    + "WHERE query LIKE 'SELECT pg_sleep%' AND state = 'active'");
            Throwable e = done.get(15, TimeUnit.SECONDS);
            Thread.sleep(1500);
            TestMain.ok(e instanceof SQLException && "57P01".equals(((SQLException) e).getSQLState())
                    && !(e instanceof LeaseLostException) && lease.state() == Lease.State.HELD,
                    "takeover: a held lease's write ended by pg_terminate_backend is the driver's 57P01, not a "
                    + "takeover; the lease stays held (" + e + ", " + lease.state() + ")");
        }
    }
}
