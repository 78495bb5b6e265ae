package io.github.pgfencing.jdbc.test;

import io.github.pgfencing.jdbc.ConnectionSource;
import io.github.pgfencing.jdbc.Fencing;
import io.github.pgfencing.jdbc.Lease;
import io.github.pgfencing.jdbc.LeaseLostException;
import io.github.pgfencing.jdbc.LeaseTakenOverException;
import io.github.pgfencing.jdbc.StaleTokenException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The lease path behind a PgBouncer in transaction pooling (test.sh runs it behind Debian 12's
 * 1.18 and Debian 13's 1.24, the library preloaded): acquire, renewals past 4 TTLs, a run of
 * lease.transaction() writes, a stale write refused as StaleTokenException with its fields, a
 * takeover (TF003 when preloaded, else 57P01) as LeaseTakenOverException with the write rolled
 * back, and no statement_timeout, fencing.token or client prepared statement left on the server
 * connections. The application's connection uses pgjdbc's prepareThreshold as given ("default":
 * the driver's 5, for a PgBouncer that tracks prepared statements; "0" before 1.21).
 *   PoolerMain POOLED_URL DIRECT_URL LABEL APP_PREPARE_THRESHOLD   (TAP numbered from -Doffset)
 */
public final class PoolerMain {
    private PoolerMain() {}

    public static void main(String[] args) throws Exception {
        String pooled = args[0];
        String direct = args[1];
        String threshold = args[3];
        TestMain.startTap(Integer.getInteger("offset", 0), args[2] + ": ");
        Properties user = new Properties();
        user.setProperty("user", System.getProperty("pguser", "postgres"));
        Properties app = new Properties();
        app.putAll(user);
        if (!"default".equals(threshold))
            app.setProperty("prepareThreshold", threshold);
        String run = Long.toString(ProcessHandle.current().pid());
        try (Connection admin = DriverManager.getConnection(direct, user)) {
            boolean preloaded = TestMain.one(admin, "SHOW shared_preload_libraries").contains("fencing");
            TestMain.exec(admin, "DROP TABLE IF EXISTS pl_rows");
            TestMain.exec(admin, "CREATE TABLE pl_rows (id int PRIMARY KEY, res text NOT NULL, v text, fence fencing_token)");
            TestMain.exec(admin, "SELECT fencing_protect('pl_rows', scope => 'resource', resource_column => 'res')");
            Fencing.withToken(admin, 1, c -> {
                TestMain.exec(c, "INSERT INTO pl_rows VALUES (1, ?, 'a'), (2, ?, 'a'), (3, ?, 'a')", "pl-a-" + run,
                        "pl-t-" + run, "pl-a-" + run);
                return null;
            });
            ConnectionSource source = ConnectionSource.of(pooled, user);
            try (Connection c = DriverManager.getConnection(pooled, app);
                    Connection other = DriverManager.getConnection(pooled, app)) {
                lease(admin, source, c, other, "pl-a-" + run);
                takeover(admin, source, c, "pl-t-" + run, preloaded);
            }
            noSessionState(pooled, user);
            TestMain.exec(admin, "DROP TABLE pl_rows");
        }
        TestMain.finish();
    }

    private static String value(Connection admin, int id) throws SQLException {
        return TestMain.one(admin, "SELECT v FROM pl_rows WHERE id = ?", id);
    }

    private static void lease(Connection admin, ConnectionSource source, Connection app, Connection other, String r)
            throws Exception {
        try (Lease lease = Lease.builder(source).resource(r).holder("a").ttl(Duration.ofMillis(1500)).acquire()) {
            TestMain.ok(lease.token() > 0 && lease.state() == Lease.State.HELD,
                    "acquire through the pooler (" + lease.token() + ", " + lease.state() + ")");
            Thread.sleep(6000);
            TestMain.ok(lease.state() == Lease.State.HELD && !lease.lost().isDone(),
                    "renewals through the pooler keep the lease past 4 TTLs (" + lease.state() + ", "
                    + lease.lostReason() + ")");
            // Two application connections take turns, each with its own statement: with pgjdbc's
            // default threshold each names its statements S_1, S_2... from the fifth run on, on
            // whichever server connection the pooler gives it; a pooler that does not keep them
            // per client runs or redefines the other client's S_1.
            Throwable failure = null;
            for (int i = 1; i <= 8 && failure == null; i++) {
                String v = "helper-" + i;
                try {
                    lease.transaction(app, c -> {
                        TestMain.exec(c, "UPDATE pl_rows SET v = ? WHERE id = 1", v);
                        return null;
                    });
                    lease.transaction(other, c -> {
                        TestMain.exec(c, "UPDATE pl_rows SET v = ? || '' WHERE id = 3 AND res IS NOT NULL", v);
                        return null;
                    });
                } catch (SQLException e) {
                    failure = e;
                }
            }
            TestMain.ok(failure == null && "helper-8".equals(value(admin, 1)) && "helper-8".equals(value(admin, 3)),
                    "lease.transaction() writes through the pooler, 8 rounds on two connections taking turns ("
                    + value(admin, 1) + ", " + value(admin, 3) + ", " + failure + ")");
            long higher = lease.token() + 1000;
            Fencing.withToken(admin, higher, c -> {
                TestMain.exec(c, "UPDATE pl_rows SET v = 'newer' WHERE id = 1");
                return null;
            });
            Throwable e = null;
            try {
                lease.transaction(app, c -> {
                    TestMain.exec(c, "UPDATE pl_rows SET v = 'stale' WHERE id = 1");
                    return null;
                });
            } catch (SQLException x) {
                e = x;
            }
            StaleTokenException s = e instanceof StaleTokenException ? (StaleTokenException) e : null;
            TestMain.ok(s != null && Long.valueOf(lease.token()).equals(s.getOfferedToken())
                    && Long.valueOf(higher).equals(s.getHighWaterMark()) && "pl_rows".equals(s.getTable())
                    && "TF001".equals(s.getSQLState()) && "newer".equals(value(admin, 1)),
                    "a stale write through the pooler: StaleTokenException (TF001) with offered token, HWM and table ("
                    + e + ", " + value(admin, 1) + ")");
        }
    }

    /** The lease released behind the holder's back, another holder's acquire ends its write. */
    private static void takeover(Connection admin, ConnectionSource source, Connection app, String r, boolean preloaded)
            throws Exception {
        try (Lease lease = Lease.builder(source).resource(r).holder("a").ttl(Duration.ofSeconds(3)).acquire()) {
            CompletableFuture<Throwable> done = CompletableFuture.supplyAsync(() -> {
                try {
                    lease.transaction(app, c -> {
                        TestMain.exec(c, "UPDATE pl_rows SET v = 'cut-off' WHERE id = 2");
                        TestMain.exec(c, "SELECT pg_sleep(10)");
                        return null;
                    });
                    return null;
                } catch (Throwable e) {
                    return e;
                }
            });
            for (int i = 0; i < 250; i++) {
                if (!"0".equals(TestMain.one(admin, "SELECT count(*) FROM pg_stat_activity "
                        + "WHERE query LIKE 'SELECT pg_sleep%' AND state = 'active'")))
                    break;
                Thread.sleep(20);
            }
            TestMain.exec(admin, "SELECT fencing_release(?, ?::text::fencing_token)", r, Long.toString(lease.token()));
            lease.lost().handle((x, y) -> null).get(5, TimeUnit.SECONDS);
            TestMain.one(admin, "SELECT fencing_acquire(?, 'other', '30 s', '5 s')::text", r);
            Throwable e = done.get(15, TimeUnit.SECONDS);
            String code = e instanceof SQLException ? ((SQLException) e).getSQLState() : null;
            String want = preloaded ? "TF003" : "57P01";
            TestMain.ok(e instanceof LeaseTakenOverException && want.equals(code)
                    && ((LeaseLostException) e).getReason() == LeaseLostException.Reason.TAKEOVER
                    && "a".equals(value(admin, 2)),
                    "a takeover through the pooler (" + (preloaded ? "preloaded: " : "not preloaded: ") + want
                    + ") is LeaseTakenOverException; the write rolled back (" + e + ", " + value(admin, 2) + ")");
        }
    }

    private static void noSessionState(String pooled, Properties user) throws SQLException {
        Properties p = new Properties();
        p.putAll(user);
        p.setProperty("prepareThreshold", "0");
        Set<String> seen = new TreeSet<>();
        try (Connection c = DriverManager.getConnection(pooled, p); Statement st = c.createStatement()) {
            for (int i = 0; i < 6; i++) {
                try (ResultSet rs = st.executeQuery("SELECT current_setting('statement_timeout') || ' '"
                        + " || coalesce(current_setting('fencing.token', true), '') || ' '"
                        + " || (SELECT count(*) FROM pg_prepared_statements WHERE name NOT LIKE 'PGBOUNCER%')")) {
                    rs.next();
                    seen.add(rs.getString(1));
                }
            }
        }
        TestMain.ok(seen.equals(Set.of("0  0")), "no statement_timeout, fencing.token or client prepared statement left "
                + "on the server connections " + seen);
    }
}
