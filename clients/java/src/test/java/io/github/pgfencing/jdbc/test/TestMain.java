package io.github.pgfencing.jdbc.test;

import io.github.pgfencing.jdbc.ConnectionSource;
import io.github.pgfencing.jdbc.Fencing;
import io.github.pgfencing.jdbc.Lease;
import io.github.pgfencing.jdbc.LeaseListener;
import io.github.pgfencing.jdbc.LeaseClosedException;
import io.github.pgfencing.jdbc.LeaseLostException;
import io.github.pgfencing.jdbc.TransactionAbortedException;
import io.github.pgfencing.jdbc.TransactionInProgressException;
import io.github.pgfencing.jdbc.LeaseUnavailableException;
import io.github.pgfencing.jdbc.StaleTokenException;
import io.github.pgfencing.jdbc.TokenRequiredException;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.postgresql.PGResultSetMetaData;

/**
 * The client's test suite, a plain-Java harness printing TAP lines ("ok N - ...",
 * "not ok N - ..."), against each database given, with the extension installed (each line
 * names the database's extension version: the library must work on older SQL too).
 *   TestMain CHILD_CLASSPATH EXAMPLE_CLASSPATH JDBC_URL...
 */
public final class TestMain {
    private static int n;
    private static int failed;
    private static String url;
    private static String childClasspath;
    private static String exampleClasspath;

    private static String label = "";

    public static void main(String[] args) throws Exception {
        childClasspath = args[0];
        exampleClasspath = args[1];
        for (int i = 2; i < args.length; i++) {
            url = args[i];
            try (Connection admin = connect(new Properties())) {
                label = "[SQL " + one(admin, "SELECT extversion FROM pg_extension WHERE extname = 'fencing'") + "] ";
                runAll(admin);
            }
        }
        System.out.println("1.." + n);
        System.exit(failed == 0 ? 0 : 1);
    }

    /** For another main in this package: TAP numbered on from offset, each line prefixed. */
    static void startTap(int offset, String prefix) {
        n = offset;
        label = prefix;
    }

    /** Prints the plan's count of failures and exits 1 if any test failed. */
    static void finish() {
        System.out.println("# " + label + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }

    private static void runAll(Connection admin) throws Exception {
        setUp(admin);
        run("acquire", () -> testAcquire(admin));
        run("contender", TestMain::testContender);
        run("heartbeat", () -> testHeartbeat(admin));
        run("renewal failure", () -> testRenewalFailure(admin));
        run("renewal refused", () -> testRenewalRefused(admin));
        run("stale write", () -> testStaleWrite(admin));
        run("autocommit", () -> testAutocommit(admin));
        run("fenced_*", () -> testFencedCalls(admin));
        run("max token", () -> testMaxToken(admin));
        run("binary", () -> testBinary(admin));
        run("pause", () -> testPause(admin));
        run("check", () -> testCheck(admin));
        run("acquireAll", () -> testAcquireAll(admin));
        run("reacquire", () -> testReacquire(admin));
        run("example", TestMain::testExample);
        run("closed", () -> testClosed(admin));
        run("commit check", () -> testCommitCheck(admin));
        run("close during renewal", () -> testCloseDuringRenewal(admin));
        run("waited acquire", () -> testWaitedAcquire(admin));
        run("takeover", () -> TakeoverTest.run(admin));
        run("set local", () -> SetLocalTest.run(admin));
    }

    // ------------------------------------------------------------------ harness

    interface Body {
        void run() throws Exception;
    }

    private static void run(String group, Body body) {
        String only = System.getProperty("only", "");
        if (!only.isEmpty() && !java.util.Arrays.asList(only.split(",")).contains(group))
            return;
        try {
            body.run();
        } catch (Throwable e) {
            ok(false, group + ": unexpected " + e);
            e.printStackTrace(System.out);
        }
    }

    static boolean ok(boolean pass, String name) {
        n++;
        if (!pass)
            failed++;
        System.out.println((pass ? "ok " : "not ok ") + n + " - " + label + name.replaceAll("\\s*\\n\\s*", " | "));
        System.out.flush();
        return pass;
    }

    private static void is(Object got, Object want, String name) {
        if (!ok(java.util.Objects.equals(got, want), name))
            System.out.println("#   got: " + got + "\n#   want: " + want);
    }

    interface Throwing {
        void run() throws Exception;
    }

    private static Throwable thrown(Throwing body) {
        try {
            body.run();
            return null;
        } catch (Throwable e) {
            return e;
        }
    }

    static Connection connect(Properties extra) throws SQLException {
        Properties p = props();
        p.putAll(extra);
        return java.sql.DriverManager.getConnection(url, p);
    }

    private static Properties props() {
        Properties p = new Properties();
        p.setProperty("user", System.getProperty("pguser", "postgres"));
        return p;
    }

    static ConnectionSource source() {
        return ConnectionSource.of(url, props());
    }

    static void exec(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++)
                ps.setObject(i + 1, args[i]);
            ps.execute();
        }
    }

    /** A plain statement in a transaction carrying token. */
    private static Void write(Connection c, long token, String sql) throws SQLException {
        return Fencing.withToken(c, token, w -> written(w, sql));
    }

    private static Void written(Connection c, String sql) throws SQLException {
        exec(c, sql);
        return null;
    }

    static String one(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++)
                ps.setObject(i + 1, args[i]);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    private static void setUp(Connection admin) throws SQLException {
        exec(admin, "DROP TABLE IF EXISTS items");
        exec(admin, "CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL, fence fencing_token)");
        exec(admin, "SELECT fencing_protect('items', 'fence')");
        write(admin, 1, "INSERT INTO items SELECT g, 0 FROM generate_series(1, 20) g");
    }

    private static String leaseRow(Connection c, String resource) throws SQLException {
        return one(c, "SELECT holder || ' ' || token::text || ' ' || live FROM fencing_leases "
                + "WHERE resource = ? AND namespace = 'default'", resource);
    }

    // ------------------------------------------------------------------ tests

    private static void testAcquire(Connection admin) throws Exception {
        try (Lease lease = Lease.builder(source()).resource("acq").holder("h-acq").ttl(Duration.ofSeconds(5)).acquire()) {
            ok(lease.token() > 0, "acquire: a positive token (" + lease.token() + ")");
            is(leaseRow(admin, "acq"), "h-acq " + lease.token() + " true", "acquire: fencing_leases shows the holder, token, live");
            ok(!lease.isLost(), "acquire: not lost");
        }
        is(one(admin, "SELECT live::text FROM fencing_leases WHERE resource = 'acq'"), "false", "acquire: close released the lease");
        org.postgresql.ds.PGSimpleDataSource ds = new org.postgresql.ds.PGSimpleDataSource();
        ds.setURL(url);
        ds.setUser(props().getProperty("user"));
        try (Lease lease = Lease.builder(ConnectionSource.of(ds)).resource("acq-ds").holder("h-ds").ttl(Duration.ofSeconds(5)).acquire()) {
            is(leaseRow(admin, "acq-ds"), "h-ds " + lease.token() + " true", "acquire: a lease from a DataSource");
        }
    }

    private static void testContender() throws Exception {
        Lease a = Lease.builder(source()).resource("cont").holder("a").ttl(Duration.ofSeconds(5)).acquire();
        try {
            Lease b = Lease.builder(source()).resource("cont").holder("b").ttl(Duration.ofSeconds(5)).tryAcquire();
            ok(b == null, "contender: tryAcquire without wait returns null while the lease is live");
            long t0 = System.nanoTime();
            Throwable e = thrown(() -> Lease.builder(source()).resource("cont").holder("b")
                    .waitFor(Duration.ofMillis(400)).acquire().close());
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            ok(e instanceof LeaseUnavailableException && "55P03".equals(((SQLException) e).getSQLState()),
                    "contender: acquire with wait throws LeaseUnavailableException (55P03): " + e);
            ok(ms >= 350 && ms < 3000, "contender: it waited about the wait (" + ms + " ms)");
            // A waiter gets the lease when the holder releases, and counts its TTL from then.
            Thread releaser = new Thread(() -> {
                try {
                    Thread.sleep(1500);
                    a.close();
                } catch (Exception x) {
                    x.printStackTrace(System.out);
                }
            });
            releaser.start();
            t0 = System.nanoTime();
            try (Lease b2 = Lease.builder(source()).resource("cont").holder("b").ttl(Duration.ofMillis(1200))
                    .waitFor(Duration.ofSeconds(5)).acquire()) {
                ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                ok(ms >= 1000 && b2.token() > a.token(), "contender: the waiter got the lease on release (" + ms
                        + " ms), token " + a.token() + " -> " + b2.token());
                ok(!b2.isLost(), "contender: a lease that waited longer than its TTL is not lost on arrival");
                Thread.sleep(2000);
                ok(!b2.isLost(), "contender: and it renews past its TTL");
            }
            releaser.join();
        } finally {
            a.close();
        }
    }

    private static void testHeartbeat(Connection admin) throws Exception {
        AtomicInteger failures = new AtomicInteger();
        LeaseListener listener = new LeaseListener() {
            public void leaseLost(Lease l, LeaseLostException why) {}

            public void renewalFailed(Lease l, SQLException e) { failures.incrementAndGet(); }
        };
        try (Lease lease = Lease.builder(source()).resource("hb").holder("h-hb").ttl(Duration.ofMillis(1500))
                .listener(listener).acquire()) {
            Thread.sleep(5000);
            ok(!lease.isLost() && !lease.lost().isDone(), "heartbeat: not lost after 3.3 TTLs (1.5 s TTL, 5 s)");
            is(leaseRow(admin, "hb"), "h-hb " + lease.token() + " true", "heartbeat: the same token is still live on the server");
            ok(Lease.builder(source()).resource("hb").holder("other").ttl(Duration.ofSeconds(1)).tryAcquire() == null,
                    "heartbeat: another holder still cannot acquire");
            is(failures.get(), 0, "heartbeat: no renewal failed");
            is(lease.transaction(admin, c -> "wrote"), "wrote", "heartbeat: writing under the lease still runs");
        }
        java.util.concurrent.ScheduledExecutorService shared = java.util.concurrent.Executors.newScheduledThreadPool(2);
        try {
            Lease x = Lease.builder(source()).resource("hb-x").ttl(Duration.ofMillis(1000)).scheduler(shared).acquire();
            Lease y = Lease.builder(source()).resource("hb-y").ttl(Duration.ofMillis(1000)).scheduler(shared).acquire();
            Thread.sleep(2200);
            ok(!x.isLost() && !y.isLost(), "heartbeat: two leases on one shared scheduler both renew past 2 TTLs");
            x.close();
            y.close();
            ok(!shared.isShutdown(), "heartbeat: closing them leaves the caller's scheduler running");
        } finally {
            shared.shutdownNow();
        }
    }

    /** Renewals fail (connection killed, source refusing): lost fires while the server lease is still live. */
    private static void testRenewalFailure(Connection admin) throws Exception {
        AtomicBoolean refuse = new AtomicBoolean();
        Properties p = props();
        p.setProperty("ApplicationName", "fencing-java-renewfail");
        ConnectionSource base = ConnectionSource.of(url, p);
        ConnectionSource flaky = () -> {
            if (refuse.get())
                throw new SQLException("test: connection refused", "08001");
            return base.open();
        };
        AtomicLong firedAt = new AtomicLong();
        AtomicInteger failures = new AtomicInteger();
        String[] serverLeft = new String[1];
        java.util.concurrent.CountDownLatch listened = new java.util.concurrent.CountDownLatch(1);
        LeaseListener listener = new LeaseListener() {
            public void leaseLost(Lease l, LeaseLostException why) {
                firedAt.set(System.nanoTime());
                try (Connection c = connect(new Properties())) {
                    serverLeft[0] = one(c, "SELECT (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::int::text "
                            + "FROM fencing_leases WHERE resource = 'rf' AND live");
                } catch (SQLException e) {
                    serverLeft[0] = "error " + e;
                }
                listened.countDown();
            }

            public void renewalFailed(Lease l, SQLException e) { failures.incrementAndGet(); }
        };
        long t0;
        try (Lease lease = Lease.builder(flaky).resource("rf").holder("h-rf").ttl(Duration.ofMillis(3000))
                .safetyMargin(Duration.ofMillis(500)).listener(listener).acquire()) {
            // The server's TTL runs from when it executed the acquire, at or before now.
            t0 = System.nanoTime();
            refuse.set(true);
            exec(admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'fencing-java-renewfail'");
            LeaseLostException why = lease.lost().get(6, TimeUnit.SECONDS);
            ok(listened.await(5, TimeUnit.SECONDS), "renewal failure: the listener ran");
            long ms = TimeUnit.NANOSECONDS.toMillis(firedAt.get() - t0);
            ok(why != null && why.getReason() == LeaseLostException.Reason.EXPIRED,
                    "renewal failure: lost fired, reason expired: " + why.getMessage());
            ok(failures.get() >= 1, "renewal failure: renewalFailed reported " + failures.get() + " failure(s)");
            ok(firedAt.get() != 0 && ms < 3000, "renewal failure: lost fired " + ms + " ms after acquire returned, "
                    + "before the 3000 ms TTL");
            ok(serverLeft[0] != null && !serverLeft[0].startsWith("error") && Integer.parseInt(serverLeft[0]) > 0,
                    "renewal failure: the server lease was still live when lost fired (" + serverLeft[0] + " ms left)");
            Throwable e = thrown(() -> lease.transaction(admin, c -> null));
            ok(e instanceof LeaseLostException, "renewal failure: transaction() refused with LeaseLostException");
            refuse.set(false);
        }
    }

    /** The server refuses a renewal (the lease was released behind the holder's back): lost at once. */
    private static void testRenewalRefused(Connection admin) throws Exception {
        AtomicInteger calls = new AtomicInteger();
        try (Lease lease = Lease.builder(source()).resource("rr").holder("h-rr").ttl(Duration.ofMillis(1500))
                .listener((l, why) -> calls.incrementAndGet()).acquire()) {
            exec(admin, "SELECT fencing_release('rr', ?::bigint)", lease.token());
            long t0 = System.nanoTime();
            LeaseLostException why = lease.lost().get(3, TimeUnit.SECONDS);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            ok(why.getReason() == LeaseLostException.Reason.REFUSED, "renewal refused: lost with reason refused: " + why.getMessage());
            ok(ms < 1000, "renewal refused: at the next renewal (" + ms + " ms), not at the deadline");
            is(calls.get(), 1, "renewal refused: the listener ran once");
            ok(lease.isLost(), "renewal refused: isLost()");
            is(why.getToken(), lease.token(), "renewal refused: LeaseLostException carries the token");
        }
    }

    private static void testStaleWrite(Connection admin) throws Exception {
        write(admin, 1000, "UPDATE items SET v = 1 WHERE id = 3");
        Throwable e = thrown(() -> write(admin, 999, "UPDATE items SET v = 2 WHERE id = 3"));
        ok(e instanceof StaleTokenException, "stale write: StaleTokenException: " + e);
        if (e instanceof StaleTokenException) {
            StaleTokenException s = (StaleTokenException) e;
            is(s.getSQLState(), "TF001", "stale write: SQLSTATE TF001");
            is(s.getSchema() + "." + s.getTable(), "public.items", "stale write: schema and table from the error fields");
            is(s.getKey(), "Key (id)=(3)", "stale write: key from DETAIL");
            is(s.getOfferedToken(), 999L, "stale write: offered token");
            is(s.getHighWaterMark(), 1000L, "stale write: high-water mark");
            ok(!s.isStrict(), "stale write: not strict");
        }
        is(one(admin, "SELECT v::text FROM items WHERE id = 3"), "1", "stale write: rolled back, the row unchanged");
        // Resource scope: the DETAIL names the resource and its namespace.
        exec(admin, "DROP TABLE IF EXISTS shard_items");
        exec(admin, "CREATE TABLE shard_items (id int PRIMARY KEY, shard text NOT NULL, v int, fence fencing_token)");
        exec(admin, "SELECT fencing_protect('shard_items', 'fence', scope => 'resource', resource_column => 'shard')");
        write(admin, 50, "INSERT INTO shard_items VALUES (1, 'east', 0)");
        Throwable r = thrown(() -> write(admin, 49, "UPDATE shard_items SET v = 1 WHERE id = 1"));
        ok(r instanceof StaleTokenException && ((StaleTokenException) r).getKey() != null
                && ((StaleTokenException) r).getKey().startsWith("Resource 'east'")
                && Long.valueOf(50).equals(((StaleTokenException) r).getHighWaterMark()),
                "stale write: resource scope, key names the resource, HWM 50: "
                        + (r instanceof StaleTokenException ? ((StaleTokenException) r).getKey() : String.valueOf(r)));
        // Strict: the other DETAIL text.
        exec(admin, "DROP TABLE IF EXISTS strict_items");
        exec(admin, "CREATE TABLE strict_items (id int PRIMARY KEY, v int, fence fencing_token)");
        exec(admin, "SELECT fencing_protect('strict_items', 'fence', strict => true)");
        write(admin, 7, "INSERT INTO strict_items VALUES (1, 0)");
        Throwable st = thrown(() -> write(admin, 7, "UPDATE strict_items SET v = 1 WHERE id = 1"));
        ok(st instanceof StaleTokenException && ((StaleTokenException) st).isStrict()
                && Long.valueOf(7).equals(((StaleTokenException) st).getOfferedToken())
                && Long.valueOf(7).equals(((StaleTokenException) st).getHighWaterMark()),
                "stale write: strict table, equal token refused, parsed as strict (offered 7, HWM 7): " + st);
    }

    private static void testAutocommit(Connection admin) throws Exception {
        try (Connection c = connect(new Properties())) {
            ok(c.getAutoCommit(), "autocommit: the connection starts in autocommit");
            Throwable plain = thrown(() -> {
                try {
                    exec(c, "UPDATE items SET v = 5 WHERE id = 4");
                } catch (SQLException e) {
                    throw Fencing.translate(e);
                }
            });
            ok(plain instanceof TokenRequiredException, "autocommit: a plain UPDATE is TokenRequiredException (TF002): " + plain);
            Throwable session = thrown(() -> {
                exec(c, "SET fencing.token = 5000");
                try {
                    exec(c, "UPDATE items SET v = 5 WHERE id = 4");
                } catch (SQLException e) {
                    throw Fencing.translate(e);
                } finally {
                    exec(c, "RESET fencing.token");
                }
            });
            ok(session instanceof TokenRequiredException,
                    "autocommit: a session-level SET fencing.token does not fence (TF002): " + session);
            Throwable local = thrown(() -> exec(c, "SET LOCAL fencing.token = 5000"));
            is(local instanceof SQLException ? ((SQLException) local).getSQLState() : String.valueOf(local), "25P01",
                    "autocommit: SET LOCAL outside a transaction is 25P01");
            long n = Fencing.withToken(c, 5000, w -> {
                try (Statement s = w.createStatement()) {
                    return (long) s.executeUpdate("UPDATE items SET v = 5 WHERE id = 4");
                }
            });
            is(n, 1L, "autocommit: withToken wrote the row");
            is(one(admin, "SELECT fence::text FROM items WHERE id = 4"), "5000", "autocommit: the row carries the token");
            ok(c.getAutoCommit(), "autocommit: restored after withToken");
            is(one(c, "SELECT current_setting('fencing.token')"), "", "autocommit: the token did not outlive the transaction");
            Throwable after = thrown(() -> {
                try {
                    exec(c, "UPDATE items SET v = 6 WHERE id = 4");
                } catch (SQLException e) {
                    throw Fencing.translate(e);
                }
            });
            ok(after instanceof TokenRequiredException, "autocommit: the next plain write is TF002 again");
            Throwable boom = thrown(() -> Fencing.withToken(c, 6000, w -> {
                exec(w, "UPDATE items SET v = 7 WHERE id = 4");
                throw new IllegalStateException("callback failed");
            }));
            ok(boom instanceof IllegalStateException, "autocommit: a failing callback's exception propagates");
            is(one(admin, "SELECT v::text || ' ' || fence::text FROM items WHERE id = 4"), "5 5000",
                    "autocommit: the failing callback's write was rolled back");
            ok(c.getAutoCommit(), "autocommit: restored after a failing callback");
            // A failed statement whose SQLException the callback caught aborted the transaction;
            // pgjdbc reports the server's ROLLBACK answer to COMMIT as a success.
            Throwable swallowed = thrown(() -> Fencing.withToken(c, 6000, w -> {
                exec(w, "UPDATE items SET v = 7 WHERE id = 4");
                try {
                    exec(w, "SELECT 1/0");
                } catch (SQLException e) {
                    // the callback goes on
                }
                return null;
            }));
            is(swallowed instanceof SQLException ? ((SQLException) swallowed).getSQLState() : String.valueOf(swallowed),
                    "25P02", "autocommit: a caught failure inside the callback is 25P02, not a commit");
            is(one(admin, "SELECT v::text || ' ' || fence::text FROM items WHERE id = 4"), "5 5000",
                    "autocommit: nothing of the aborted callback was committed");
            ok(c.getAutoCommit(), "autocommit: restored after an aborted callback");
            // Without pgjdbc's internal transaction state (or with a pgjdbc that lacks it), the
            // aborted transaction is found by asking the server.
            System.setProperty("io.github.pgfencing.jdbc.probeAborted", "true");
            try {
                Throwable probed = thrown(() -> Fencing.withToken(c, 6000, w -> {
                    exec(w, "UPDATE items SET v = 7 WHERE id = 4");
                    try {
                        exec(w, "SELECT 1/0");
                    } catch (SQLException ignored) {
                        // swallowed
                    }
                    return null;
                }));
                ok(probed instanceof TransactionAbortedException, "autocommit: without pgjdbc internals the aborted "
                        + "transaction is still refused (" + probed + ")");
            } finally {
                System.clearProperty("io.github.pgfencing.jdbc.probeAborted");
            }
            is(one(admin, "SELECT v::text || ' ' || fence::text FROM items WHERE id = 4"), "5 5000",
                    "autocommit: nothing of the probed aborted callback was committed");
            // With autocommit off the connection is inside the caller's transaction: refused, and the
            // caller's transaction is neither joined nor committed nor rolled back.
            c.setAutoCommit(false);
            exec(c, "SELECT 1");
            Throwable inTx = thrown(() -> write(c, 7000, "UPDATE items SET v = 8 WHERE id = 4"));
            ok(inTx instanceof TransactionInProgressException, "autocommit off: withToken refused with "
                    + "TransactionInProgressException (" + inTx + ")");
            ok(!c.getAutoCommit(), "autocommit off: left off");
            is(one(c, "SELECT current_setting('fencing.token', true)"), "", "autocommit off: no token set in the caller's transaction");
            is(one(admin, "SELECT v::text FROM items WHERE id = 4"), "5", "autocommit off: nothing written");
            c.rollback();
            c.setAutoCommit(true);
        }
    }

    private static void testFencedCalls(Connection admin) throws Exception {
        is(Fencing.fencedUpdate(admin, "items", 2000, "{\"id\": 5}", "{\"v\": 50}"), 1L, "fenced_update: 1 row");
        Throwable e = thrown(() -> Fencing.fencedUpdate(admin, "items", 1999, "{\"id\": 5}", "{\"v\": 51}"));
        ok(e instanceof StaleTokenException && ((StaleTokenException) e).getHighWaterMark() == 2000L
                && ((StaleTokenException) e).getOfferedToken() == 1999L
                && "items".equals(((StaleTokenException) e).getTable()),
                "fenced_update: a stale token is StaleTokenException with HWM 2000, offered 1999: " + e);
        is(Fencing.fencedUpdate(admin, "items", 2000, "{\"id\": 999}", "{\"v\": 1}"), 0L, "fenced_update: a missing key is 0 rows, no exception");
        is(Fencing.fencedUpsert(admin, "items", 2001, "{\"id\": 21, \"v\": 210}"), 1L, "fenced_upsert: 1 row");
        is(one(admin, "SELECT v::text || ' ' || fence::text FROM items WHERE id = 21"), "210 2001", "fenced_upsert: row and token stored");
        if (serverHas(admin, "fenced_upsert_result")) {
            Throwable u = thrown(() -> Fencing.fencedUpsert(admin, "items", 2000, "{\"id\": 21, \"v\": 0}"));
            ok(u instanceof StaleTokenException && ((StaleTokenException) u).getHighWaterMark() == 2001L,
                    "fenced_upsert: a stale token on an existing row is StaleTokenException with HWM 2001 "
                            + "(fenced_upsert_result): " + u);
        } else {
            is(Fencing.fencedUpsert(admin, "items", 2000, "{\"id\": 21, \"v\": 0}"), 0L,
                    "fenced_upsert: a stale token on an existing row writes 0 rows (no fenced_upsert_result here)");
        }
        if (serverHas(admin, "fenced_update_result")) {
            // A key that matches several rows, one of them stale: the stale one is reported even
            // though others were written; a strict table's equal mark is reported as strict.
            exec(admin, "CREATE TABLE mixed_t (g int, id int, v int, fence fencing_token, PRIMARY KEY (g, id))");
            write(admin, 10, "INSERT INTO mixed_t VALUES (1, 1, 0), (1, 2, 0)");
            write(admin, 50, "UPDATE mixed_t SET v = 0 WHERE id = 2");
            Throwable mixed = thrown(() -> Fencing.fencedUpdate(admin, "mixed_t", 20, "{\"g\": 1}", "{\"v\": 1}"));
            ok(mixed instanceof StaleTokenException && ((StaleTokenException) mixed).getHighWaterMark() == 50L,
                    "fenced_update: one stale row beside a written one is StaleTokenException (HWM 50): " + mixed);
            exec(admin, "SELECT fencing_protect('mixed_t', strict => true)");
            Throwable strict = thrown(() -> Fencing.fencedUpdate(admin, "mixed_t", 50, "{\"g\": 1, \"id\": 2}", "{\"v\": 2}"));
            ok(strict instanceof StaleTokenException && ((StaleTokenException) strict).isStrict()
                    && ((StaleTokenException) strict).getHighWaterMark() == 50L,
                    "fenced_update: a strict table's equal mark is StaleTokenException with isStrict(): " + strict);
            exec(admin, "DROP TABLE mixed_t");
        }
        Throwable d = thrown(() -> Fencing.fencedDelete(admin, "items", 2000, "{\"id\": 21}"));
        ok(d instanceof StaleTokenException, "fenced_delete: a stale token is StaleTokenException: " + d);
        is(Fencing.fencedDelete(admin, "items", 2002, "{\"id\": 21}"), 1L, "fenced_delete: 1 row with a current token");
        Throwable missing = thrown(() -> Fencing.fencedUpdate(admin, "no_such_table", 1, "{\"id\": 1}", "{\"v\": 1}"));
        ok(missing instanceof SQLException && !(missing instanceof StaleTokenException),
                "fenced_update: an unknown table is a plain SQLException: " + missing);
    }

    private static void testMaxToken(Connection admin) throws Exception {
        exec(admin, "SELECT fencing_resource_advance('maxres', 9223372036854775806)");
        try (Lease lease = Lease.builder(source()).resource("maxres").holder("h-max").ttl(Duration.ofSeconds(5)).acquire()) {
            is(lease.token(), Long.MAX_VALUE, "max token: the lease issues 9223372036854775807 exactly");
            write(admin, lease.token(), "UPDATE items SET v = 9 WHERE id = 6");
            is(one(admin, "SELECT fence::text FROM items WHERE id = 6"), "9223372036854775807", "max token: the row carries it");
            try (PreparedStatement ps = admin.prepareStatement("SELECT fence FROM items WHERE id = 6");
                    ResultSet rs = ps.executeQuery()) {
                rs.next();
                is(rs.getLong(1), Long.MAX_VALUE, "max token: getLong on the fencing_token column (text)");
                is(Fencing.getToken(rs, 1), Long.MAX_VALUE, "max token: Fencing.getToken (text)");
            }
        }
        Throwable e = thrown(() -> Lease.builder(source()).resource("maxres").holder("h-max2").ttl(Duration.ofSeconds(5)).acquire());
        ok(e instanceof SQLException && !"XX000".equals(((SQLException) e).getSQLState())
                && !(e instanceof LeaseUnavailableException),
                "max token: no token above it: a clear error, not XX000: " + e);
    }

    private static void testBinary(Connection admin) throws Exception {
        Properties forced = new Properties();
        forced.setProperty("prepareThreshold", "-1"); // every statement server-prepared, binary where pgjdbc can
        exec(admin, "SELECT fencing_resource_advance('binres', 9223372036854775806)");
        try (Connection c = connect(forced)) {
            try (Lease lease = Lease.builder(() -> connect(forced)).resource("binres").holder("h-bin")
                    .ttl(Duration.ofSeconds(5)).acquire()) {
                is(lease.token(), Long.MAX_VALUE, "binary: a lease over binary transfer gets the max token exactly");
                is(Fencing.fencedUpdate(c, "items", lease.token(), "{\"id\": 7}", "{\"v\": 70}"), 1L,
                        "binary: fenced_update binds the max token (int8, binary)");
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT fence::bigint, fence FROM items WHERE id = 7");
                    ResultSet rs = ps.executeQuery()) {
                rs.next();
                int format = rs.getMetaData().unwrap(PGResultSetMetaData.class).getFormat(1);
                is(format, 1, "binary: the bigint column did come back in binary format");
                is(rs.getLong(1), Long.MAX_VALUE, "binary: getLong on fence::bigint");
                is(Fencing.getToken(rs, 2), Long.MAX_VALUE, "binary: getToken on the fencing_token column (sent as text)");
            }
        }
        int oid = Fencing.tokenTypeOid(admin);
        Properties registered = new Properties();
        registered.setProperty("prepareThreshold", "-1");
        registered.setProperty("binaryTransferEnable", Integer.toString(oid));
        try (Connection c = connect(registered);
                PreparedStatement ps = c.prepareStatement("SELECT fence FROM items WHERE id = 7");
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            int format = rs.getMetaData().unwrap(PGResultSetMetaData.class).getFormat(1);
            is(format, 1, "binary: with binaryTransferEnable=" + oid + " the fencing_token column comes in binary");
            is(Fencing.getToken(rs, 1), Long.MAX_VALUE, "binary: getToken decodes it exactly");
            Throwable e = thrown(() -> rs.getLong(1));
            ok(e instanceof SQLException, "binary: pgjdbc's own getLong cannot decode it (documented): " + e);
        }
        Properties byName = new Properties();
        byName.setProperty("binaryTransferEnable", "fencing_token");
        Throwable e = thrown(() -> connect(byName).close());
        ok(e instanceof SQLException && String.valueOf(e.getMessage()).contains("not a number"),
                "binary: pgjdbc 42.5 refuses the type's name in binaryTransferEnable (OIDs only): " + e);
    }

    /** The holder as a child JVM: SIGSTOP past its TTL, a new holder writes, SIGCONT. */
    private static void testPause(Connection admin) throws Exception {
        long ttlMs = 2000;
        String java = System.getProperty("java.home") + "/bin/java";
        Process child = new ProcessBuilder(java, "-cp", childClasspath, PausedHolder.class.getName(), url, "paused",
                Long.toString(ttlMs), "8").redirectErrorStream(true).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        List<String> lines = new ArrayList<>();
        try {
            String first = out.readLine();
            lines.add(first);
            ok(first != null && first.startsWith("token "), "pause: the child acquired: " + first);
            long t1 = Long.parseLong(first.substring(6));
            String inWrite = out.readLine();
            is(inWrite, "in-write", "pause: the child is inside its write");
            signal("STOP", child.pid());
            Thread.sleep(ttlMs + 1000);
            long t2;
            try (Lease next = Lease.builder(source()).resource("paused").holder("successor").ttl(Duration.ofSeconds(10)).acquire()) {
                t2 = next.token();
                ok(t2 > t1, "pause: a successor acquired past the child's TTL with a newer token (" + t1 + " -> " + t2 + ")");
                next.transaction(admin, c -> written(c, "UPDATE items SET v = 100 WHERE id = 8"));
            }
            signal("CONT", child.pid());
            String line;
            while ((line = out.readLine()) != null)
                lines.add(line);
            ok(child.waitFor(20, TimeUnit.SECONDS) && child.exitValue() == 0, "pause: the child exited 0");
            String all = String.join("\n", lines);
            ok(all.contains("stale schema=public table=items key=Key (id)=(8) offered=" + t1 + " hwm=" + t2 + " strict=false"),
                    "pause: the late write was refused with StaleTokenException (public.items, Key (id)=(8), offered "
                            + t1 + ", HWM " + t2 + ")");
            ok(all.contains("lost isLost=true listener=true"), "pause: the lost signal fired (listener, future, isLost)");
            ok(all.contains("transaction after lost: refused"), "pause: the lease refuses further transactions");
            is(one(admin, "SELECT v::text FROM items WHERE id = 8"), "100", "pause: the successor's write stands");
        } finally {
            if (child.isAlive()) {
                signal("CONT", child.pid());
                child.destroyForcibly();
            }
            for (String l : lines)
                System.out.println("# child: " + l);
        }
    }

    private static void testExample() throws Exception {
        String java = System.getProperty("java.home") + "/bin/java";
        Process p = new ProcessBuilder(java, "-Dpguser=" + props().getProperty("user"), "-cp", exampleClasspath,
                "LeaseExample", url).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        boolean exited = p.waitFor(60, TimeUnit.SECONDS);
        for (String l : output.split("\n"))
            System.out.println("# example: " + l);
        ok(exited && p.exitValue() == 0 && output.contains("stale holder refused"),
                "example: LeaseExample runs and its stale holder is refused");
    }

    /**
     * After close() the lease is CLOSED, not lost: transaction() and fenced_* refuse with
     * LeaseClosedException before anything is sent, lost() completes (exceptionally, with
     * LeaseClosedException) instead of staying pending, and the listener does not run.
     */
    private static void testClosed(Connection admin) throws Exception {
        AtomicInteger fired = new AtomicInteger();
        Lease lease = Lease.builder(source()).resource("closed").holder("h-closed").ttl(Duration.ofSeconds(3))
                .listener((l, why) -> fired.incrementAndGet()).acquire();
        is(lease.state(), Lease.State.HELD, "closed: held after acquire");
        ok(lease.release(), "closed: release() ended the live lease");
        is(lease.state(), Lease.State.CLOSED, "closed: state CLOSED after release");
        ok(lease.isClosed() && !lease.isLost(), "closed: isClosed, not isLost");
        Throwable waited = thrown(() -> lease.lost().get(1, TimeUnit.SECONDS));
        ok(waited instanceof java.util.concurrent.ExecutionException && waited.getCause() instanceof LeaseClosedException,
                "closed: lost() completed exceptionally with LeaseClosedException (" + waited + ")");
        String before = one(admin, "SELECT v::text FROM items WHERE id = 9");
        AtomicBoolean ran = new AtomicBoolean();
        Throwable tx = thrown(() -> lease.transaction(admin, c -> {
            ran.set(true);
            exec(c, "UPDATE items SET v = v + 1 WHERE id = 9");
            return null;
        }));
        ok(tx instanceof LeaseClosedException && !ran.get(), "closed: transaction() refused with LeaseClosedException, "
                + "the work did not run (" + tx + ")");
        is(one(admin, "SELECT v::text FROM items WHERE id = 9"), before, "closed: nothing committed under the released token");
        Throwable fenced = thrown(() -> lease.fencedUpdate(admin, "items", "{\"id\": 9}", "{\"v\": 1}"));
        ok(fenced instanceof LeaseClosedException, "closed: fencedUpdate refused with LeaseClosedException");
        ok(!lease.release(), "closed: a second release() is false");
        lease.close();
        is(fired.get(), 0, "closed: the lost listener never ran");
        // A lease lost, then closed: CLOSED, and still lost.
        Lease lost = Lease.builder(source()).resource("closed-lost").holder("h-cl").ttl(Duration.ofMillis(1500)).acquire();
        exec(admin, "SELECT fencing_release('closed-lost', ?::bigint)", lost.token());
        lost.lost().get(3, TimeUnit.SECONDS);
        lost.close();
        ok(lost.state() == Lease.State.CLOSED && lost.isLost(), "closed: a lost lease closed is CLOSED and still lost");
        Throwable t2 = thrown(() -> lost.transaction(admin, c -> null));
        ok(t2 instanceof LeaseClosedException, "closed: ... and refuses with LeaseClosedException");
    }

    /**
     * The lease is checked before COMMIT: a lease lost while the work runs (its renewals blocked
     * by a lock on its row) rolls the work back with LeaseLostException.
     */
    private static void testCommitCheck(Connection admin) throws Exception {
        try (Lease lease = Lease.builder(source()).resource("cc").holder("h-cc").ttl(Duration.ofMillis(1500)).acquire();
                Connection locker = connect(new Properties()); Connection c = connect(new Properties())) {
            locker.setAutoCommit(false);
            exec(locker, "SELECT 1 FROM fencing.lease WHERE resource = 'cc' FOR UPDATE");
            String before = one(admin, "SELECT v::text FROM items WHERE id = 10");
            Throwable e = thrown(() -> lease.transaction(c, w -> {
                exec(w, "UPDATE items SET v = v + 1 WHERE id = 10");
                try {
                    Thread.sleep(1800);
                } catch (InterruptedException ie) {
                    throw new SQLException(ie);
                }
                return null;
            }));
            locker.rollback();
            ok(e instanceof LeaseLostException, "commit check: lost during the work: LeaseLostException (" + e + ")");
            is(one(admin, "SELECT v::text FROM items WHERE id = 10"), before, "commit check: the work was rolled back");
            ok(c.getAutoCommit(), "commit check: autocommit restored");
        }
    }

    /**
     * close() while a renewal hangs (its row locked): close cancels and waits for it instead of
     * using the connection at the same time; it returns within its bound, no lost signal fires,
     * and the lease is released once the lock is gone.
     */
    private static void testCloseDuringRenewal(Connection admin) throws Exception {
        AtomicInteger fired = new AtomicInteger();
        Lease lease = Lease.builder(source()).resource("cdr").holder("h-cdr").ttl(Duration.ofMillis(3000))
                .listener((l, why) -> fired.incrementAndGet()).acquire();
        try (Connection locker = connect(new Properties())) {
            locker.setAutoCommit(false);
            exec(locker, "SELECT 1 FROM fencing.lease WHERE resource = 'cdr' FOR UPDATE");
            Thread.sleep(1300); // the first renewal (1 s, at most 20% earlier) is now blocked
            ok(one(admin, "SELECT count(*)::text FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    + "AND query LIKE '%fencing_renew%'").equals("1"), "close during renewal: a renewal is blocked");
            Thread unlock = new Thread(() -> {
                try {
                    Thread.sleep(1500);
                    locker.rollback();
                } catch (Exception ignored) {
                    // the test fails on the lease row below
                }
            });
            unlock.start();
            long t0 = System.nanoTime();
            lease.close();
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            unlock.join();
            ok(ms < 4000, "close during renewal: close() returned in " + ms + " ms (ttl + 1 s bound)");
            is(lease.state(), Lease.State.CLOSED, "close during renewal: state CLOSED");
            Thread.sleep(500);
            ok(leaseRow(admin, "cdr").endsWith("false"), "close during renewal: the server's lease is not live: "
                    + leaseRow(admin, "cdr"));
            Thread.sleep(500);
            is(fired.get(), 0, "close during renewal: no lost signal");
        }
    }

    /**
     * A lease that waited for its predecessor gets the whole TTL, counted from after the grant:
     * not declared lost while the server extends it.
     */
    private static void testWaitedAcquire(Connection admin) throws Exception {
        Lease first = Lease.builder(source()).resource("wa").holder("h-wa1").ttl(Duration.ofSeconds(10)).acquire();
        Thread releaser = new Thread(() -> {
            try {
                Thread.sleep(2000);
                first.close();
            } catch (Exception ignored) {
                // the waiter fails below
            }
        });
        releaser.start();
        long t0 = System.nanoTime();
        try (Lease waited = Lease.builder(source()).resource("wa").holder("h-wa2").ttl(Duration.ofMillis(2500))
                .waitFor(Duration.ofSeconds(10)).acquire()) {
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            releaser.join();
            ok(ms >= 1900, "waited acquire: waited " + ms + " ms for the release");
            Thread.sleep(2000);
            ok(!waited.isLost(), "waited acquire: not lost 2 s after the grant (ttl 2.5 s, waited " + ms + " ms)");
            Thread.sleep(3000);
            ok(!waited.isLost() && leaseRow(admin, "wa").endsWith("true"), "waited acquire: renewed past 2 TTLs");
        }
    }

    private static void signal(String sig, long pid) throws Exception {
        Process k = new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).inheritIO().start();
        if (k.waitFor() != 0)
            throw new IllegalStateException("kill -" + sig + " failed");
    }

    // Whether the installed SQL has function. From 1.5 on it must: a missing
    // function there is a failure, never a reason to test less.
    private static boolean serverHas(Connection c, String function) throws SQLException {
        boolean has = one(c, "SELECT 1 FROM pg_proc p JOIN pg_extension e ON e.extnamespace = p.pronamespace "
                + "WHERE e.extname = 'fencing' AND p.proname = ?", function) != null;
        boolean required = "true".equals(one(c, "SELECT (string_to_array(extversion, '.')::int[] >= '{1,5}')::text "
                + "FROM pg_extension WHERE extname = 'fencing'"));
        if (required)
            ok(has, "the installed SQL (1.5 or later) has " + function + "()");
        return has;
    }

    private static void testCheck(Connection admin) throws Exception {
        if (!serverHas(admin, "fencing_check")) {
            Throwable e = thrown(() -> Fencing.check(admin, "chk", 1, "default"));
            ok(e instanceof SQLException && "55000".equals(((SQLException) e).getSQLState())
                    && e.getMessage().contains("ALTER EXTENSION fencing UPDATE"),
                    "check: without fencing_check() on the server, a clear 55000 with the update hint: " + e);
            System.out.println("# check: the server has no fencing_check(); its functional tests need it");
            return;
        }
        long old;
        try (Lease lease = Lease.builder(source()).resource("chk").holder("h-chk").ttl(Duration.ofSeconds(5)).acquire()) {
            old = lease.token();
            ok(lease.check(admin), "check: the live lease's token is current");
        }
        long newer;
        try (Lease next = Lease.builder(source()).resource("chk").holder("h-chk2").ttl(Duration.ofSeconds(5)).acquire()) {
            newer = next.token();
            ok(!Fencing.check(admin, "chk", old, "default"), "check: the old token is not current once a newer one is issued");
            ok(next.check(admin), "check: the new token is current");
            exec(admin, "SELECT fencing_resource_advance('chk', ?::bigint)", newer + 5);
            ok(!next.check(admin), "check: not current once the resource's HWM passed it");
        }
        ok(!Fencing.check(admin, "chk", newer, "default"), "check: not current after its lease was released");
    }

    /** Re-acquire by the live holder: its token again, TTL extended (the 1.5 lease section). */
    private static void testReacquire(Connection admin) throws Exception {
        if (!serverHas(admin, "fencing_acquire_all")) {
            System.out.println("# reacquire: the server's lease functions predate 1.5 (a holder's re-acquire returns NULL there)");
            return;
        }
        try (Lease a = Lease.builder(source()).resource("reacq").holder("a").ttl(Duration.ofSeconds(5)).acquire();
                Lease again = Lease.builder(source()).resource("reacq").holder("a").ttl(Duration.ofSeconds(5)).acquire()) {
            is(again.token(), a.token(), "reacquire: the same holder gets its live token back");
        }
    }

    private static void testAcquireAll(Connection admin) throws Exception {
        if (!serverHas(admin, "fencing_acquire_all")) {
            Throwable e = thrown(() -> Fencing.acquireAll(admin, List.of("m1", "m2"), "h", Duration.ofSeconds(5), null, "default"));
            ok(e instanceof SQLException && "55000".equals(((SQLException) e).getSQLState())
                    && e.getMessage().contains("ALTER EXTENSION fencing UPDATE"),
                    "acquireAll: without fencing_acquire_all() on the server, a clear 55000 with the update hint: " + e);
            Throwable g = thrown(() -> Lease.builder(source()).resources(List.of("g1", "g2")).acquire().close());
            ok(g instanceof SQLException && "55000".equals(((SQLException) g).getSQLState()),
                    "acquireAll: a several-resource Lease is refused the same way: " + g);
            System.out.println("# acquireAll: the server has no fencing_acquire_all(); its functional tests need it");
            return;
        }
        long[] t = Fencing.acquireAll(admin, List.of("m1", "m2", "m3"), "h-all", Duration.ofSeconds(5), null, "default");
        ok(t != null && t.length == 3 && t[0] > 0 && t[1] > 0 && t[2] > 0, "acquireAll: three tokens");
        for (int i = 0; t != null && i < 3; i++)
            is(leaseRow(admin, "m" + (i + 1)), "h-all " + t[i] + " true", "acquireAll: m" + (i + 1) + " leased with its token");
        long[] none = Fencing.acquireAll(admin, List.of("m4", "m2"), "h-other", Duration.ofSeconds(5), null, "default");
        ok(none == null, "acquireAll: null when one resource is held by another holder");
        ok(one(admin, "SELECT 1 FROM fencing_leases WHERE resource = 'm4' AND live") == null,
                "acquireAll: all or none: m4 was not left leased");
        long t0 = System.nanoTime();
        long[] waited = Fencing.acquireAll(admin, List.of("m4", "m2"), "h-other", Duration.ofSeconds(5), Duration.ofMillis(300), "default");
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        ok(waited == null && ms >= 250 && ms < 3000, "acquireAll: with wait, null after about the wait (" + ms + " ms)");
        for (int i = 0; t != null && i < 3; i++)
            exec(admin, "SELECT fencing_release(?, ?::bigint)", "m" + (i + 1), t[i]);
        long[] after = Fencing.acquireAll(admin, List.of("m4", "m2"), "h-other", Duration.ofSeconds(5), null, "default");
        ok(after != null && after.length == 2 && t != null && after[1] > t[1], "acquireAll: after release, acquired with newer tokens");
        for (int i = 0; after != null && i < 2; i++)
            exec(admin, "SELECT fencing_release(?, ?::bigint)", i == 0 ? "m4" : "m2", after[i]);
        // A Lease over several resources: acquired together, renewed together, released on close.
        try (Lease group = Lease.builder(source()).resources(List.of("g1", "g2", "g3")).holder("h-group")
                .ttl(Duration.ofMillis(1500)).acquire()) {
            long[] gt = group.tokens();
            is(gt.length, 3, "acquireAll: a Lease over three resources has three tokens");
            ok(thrown(group::token) instanceof IllegalStateException, "acquireAll: token() without a resource is refused");
            Thread.sleep(3500);
            ok(!group.isLost(), "acquireAll: the group lease is not lost after 2.3 TTLs");
            is(one(admin, "SELECT count(*)::text FROM fencing_leases WHERE resource IN ('g1', 'g2', 'g3') AND live "
                    + "AND holder = 'h-group'"), "3", "acquireAll: all three renewed, live on the server");
            group.transaction(admin, "g2", c -> written(c, "UPDATE items SET v = 2 WHERE id = 9"));
            is(one(admin, "SELECT fence::text FROM items WHERE id = 9"), Long.toString(group.token("g2")),
                    "acquireAll: transaction(c, \"g2\", ...) writes under g2's token");
            ok(Lease.builder(source()).resources(List.of("g4", "g3")).holder("x").ttl(Duration.ofSeconds(1)).tryAcquire() == null,
                    "acquireAll: a second group overlapping it is not acquired");
            ok(one(admin, "SELECT 1 FROM fencing_leases WHERE resource = 'g4' AND live") == null,
                    "acquireAll: and holds none of its resources");
        }
        is(one(admin, "SELECT count(*)::text FROM fencing_leases WHERE resource IN ('g1', 'g2', 'g3') AND live"), "0",
                "acquireAll: close released all three");
    }
}
