// fencing from Java with JDBC (pgjdbc, Debian libpostgresql-jdbc-java).
//
// Tokens are long: 0 to 9223372036854775807 (Long.MAX_VALUE), bound with
// setLong (bigint, which converts to fencing_token implicitly).
//
// A lease token, advance, read, fenced_update(), an ordinary
// PreparedStatement UPDATE under SET LOCAL fencing.token, the full-row UPDATE
// that Hibernate issues (every column written back, the token column with the
// value read: the echo rule lets it carry the session token), then a stale
// holder's writes caught as StaleTokenException (SQLSTATE TF001 or 0 rows),
// a token-less write as TokenRequiredException (TF002), and the largest
// token. Connection from the libpq environment (PGHOST, PGPORT, PGUSER,
// PGDATABASE). Prints "ok - ..." lines; exits 1 on the first failure.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

public final class FencingExample {

    /** A write refused by fencing. */
    public static class FencingException extends SQLException {
        private static final long serialVersionUID = 1L;

        FencingException(String message, String sqlState, Throwable cause) {
            super(message, sqlState, cause);
        }
    }

    /** The lock was lost: re-acquire it to get a new token, re-read, then write. */
    public static final class StaleTokenException extends FencingException {
        private static final long serialVersionUID = 1L;
        public final Long offered;
        public final Long highWaterMark;

        StaleTokenException(String message, String sqlState, Long offered, Long hwm, Throwable cause) {
            super(message, sqlState, cause);
            this.offered = offered;
            this.highWaterMark = hwm;
        }
    }

    public static final class TokenRequiredException extends FencingException {
        private static final long serialVersionUID = 1L;

        TokenRequiredException(String message, Throwable cause) {
            super(message, "TF002", cause);
        }
    }

    // TF001's DETAIL: "<key>: offered token T is below the high-water mark H."
    // (strict mode: "is not above"). pgjdbc exposes DETAIL as
    // ServerErrorMessage.getDetail(); the numbers are inside its text, so
    // that field is parsed, from its end.
    private static final Pattern DETAIL = Pattern.compile(
            "offered token (\\d+) is (?:below|not above) the high-water mark (\\d+)(?: \\(strict[^)]*\\))?\\.$");

    /** The typed exception for a server error, or the error itself. */
    static SQLException typed(SQLException e) {
        if ("TF001".equals(e.getSQLState())) {
            Long offered = null, hwm = null;
            if (e instanceof PSQLException) {
                ServerErrorMessage m = ((PSQLException) e).getServerErrorMessage();
                Matcher d = DETAIL.matcher(m != null && m.getDetail() != null ? m.getDetail() : "");
                if (d.find()) {
                    offered = Long.parseLong(d.group(1));
                    hwm = Long.parseLong(d.group(2));
                }
            }
            return new StaleTokenException(e.getMessage(), "TF001", offered, hwm, e);
        }
        if ("TF002".equals(e.getSQLState()))
            return new TokenRequiredException(e.getMessage(), e);
        return e;
    }

    /** Work done in a transaction under a token. */
    interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    /** BEGIN; SET LOCAL fencing.token; work; COMMIT. Rolls back on any error. */
    static <T> T withToken(Connection c, long token, Work<T> work) throws SQLException {
        c.setAutoCommit(false);
        try {
            try (PreparedStatement ps = c.prepareStatement("SELECT set_config('fencing.token', ?, true)")) {
                ps.setString(1, Long.toString(token));
                ps.execute();
            }
            T result = work.run(c);
            c.commit();
            return result;
        } catch (SQLException e) {
            c.rollback();
            throw typed(e);
        } finally {
            c.setAutoCommit(true);
        }
    }

    /** fenced_update(): rows written; 0 rows at or below the key's HWM is StaleTokenException. */
    static long fencedUpdate(Connection c, String table, long token, String key, String changes)
            throws SQLException {
        long n;
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT fenced_update(?::regclass, ?, ?::jsonb, ?::jsonb)")) {
            ps.setString(1, table);
            ps.setLong(2, token);
            ps.setString(3, key);
            ps.setString(4, changes);
            n = single(ps).getLong(1);
        }
        if (n == 0) {
            long hwm = highWater(c, table, key);
            if (hwm >= token)
                throw new StaleTokenException("fenced_update() wrote 0 rows", null, token, hwm, null);
        }
        return n;
    }

    static long highWater(Connection c, String table, String key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT fencing_high_water(?::regclass, ?::jsonb)::text")) {
            ps.setString(1, table);
            ps.setString(2, key);
            return Long.parseLong(single(ps).getString(1));
        }
    }

    static ResultSet single(PreparedStatement ps) throws SQLException {
        ResultSet rs = ps.executeQuery();
        if (!rs.next())
            throw new SQLException("no row");
        return rs;
    }

    static long acquire(Connection c, String resource, String holder) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT fencing_acquire(?, ?, '30 s')::text")) {
            ps.setString(1, resource);
            ps.setString(2, holder);
            return Long.parseLong(single(ps).getString(1));
        }
    }

    static void call(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++)
                ps.setObject(i + 1, args[i]);
            ps.execute();
        }
    }

    /** The entity as an ORM reads it. */
    static final class Item {
        String item;
        int stock;
        String note;
        long fence;
    }

    static Item load(Connection c, String item) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT item, stock, note, fence FROM ex_java WHERE item = ?")) {
            ps.setString(1, item);
            ResultSet rs = single(ps);
            Item i = new Item();
            i.item = rs.getString(1);
            i.stock = rs.getInt(2);
            i.note = rs.getString(3);
            i.fence = Long.parseLong(rs.getString(4));
            return i;
        }
    }

    /** Hibernate's default UPDATE: every column, the token column with the value read. */
    static int saveFullRow(Connection c, Item i) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "update ex_java set stock=?, note=?, fence=? where item=?")) {
            ps.setInt(1, i.stock);
            ps.setString(2, i.note);
            ps.setLong(3, i.fence);
            ps.setString(4, i.item);
            return ps.executeUpdate();
        }
    }

    static void ok(String what, boolean cond) {
        System.out.println((cond ? "ok" : "not ok") + " - " + what);
        if (!cond)
            System.exit(1);
    }

    interface Action {
        void run() throws SQLException;
    }

    static StaleTokenException expectStale(String what, Action action) throws SQLException {
        try {
            action.run();
        } catch (StaleTokenException e) {
            return e;
        }
        ok(what + " refused", false);
        return null;
    }

    public static void main(String[] args) throws Exception {
        // TCP to the server of the libpq environment (pgjdbc 42.5 reaches Unix
        // sockets only through an extra socket factory).
        String url = "jdbc:postgresql://127.0.0.1:" + System.getenv("PGPORT") + "/" + System.getenv("PGDATABASE");
        Properties props = new Properties();
        props.setProperty("user", System.getenv("PGUSER"));
        try (Connection c = DriverManager.getConnection(url, props)) {
            String key = "{\"item\": \"SKU-001\"}";
            String resource = "ex-java-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
            call(c, "SET client_min_messages = warning");
            call(c, "DROP TABLE IF EXISTS ex_java");
            call(c, "CREATE TABLE ex_java (item text PRIMARY KEY, stock int NOT NULL, note text, fence fencing_token)");
            call(c, "INSERT INTO ex_java VALUES ('SKU-001', 10, 'new', 0)");

            long a = acquire(c, resource, "worker-a");
            ok("acquired token " + a, a > 0);
            try (PreparedStatement ps = c.prepareStatement("SELECT fencing_advance(?::regclass, ?, ?::jsonb)")) {
                ps.setString(1, "ex_java");
                ps.setLong(2, a);
                ps.setString(3, key);
                ok("advanced SKU-001 to " + a, single(ps).getBoolean(1));
            }
            Item read = load(c, "SKU-001");
            ok("fenced_update wrote 1 row",
                    fencedUpdate(c, "ex_java", a, key, "{\"stock\": " + (read.stock - 1) + "}") == 1);
            int n = withToken(c, a, conn -> {
                try (PreparedStatement ps = conn.prepareStatement(
                        "UPDATE ex_java SET stock = stock - 1 WHERE item = ?")) {
                    ps.setString(1, "SKU-001");
                    return ps.executeUpdate();
                }
            });
            ok("PreparedStatement UPDATE under SET LOCAL fencing.token wrote 1 row", n == 1);
            read = load(c, "SKU-001");
            ok("stock 8, fence " + a, read.stock == 8 && read.fence == a);

            call(c, "SELECT fencing_release(?, ?)", resource, a);
            long b = acquire(c, resource, "worker-b");
            call(c, "SELECT fencing_advance('ex_java', ?, ?::jsonb)", b, key);
            // B works like Hibernate: load the entity, change it, write every
            // column back (fence as read: b, since B's advance raised it).
            n = withToken(c, b, conn -> {
                Item i = load(conn, "SKU-001");
                i.stock = 7;
                i.note = "written by B";
                return saveFullRow(conn, i);
            });
            Item afterB = load(c, "SKU-001");
            ok("B's full-row UPDATE under fencing.token " + b + " wrote 1 row",
                    n == 1 && afterB.stock == 7 && afterB.fence == b);

            StaleTokenException e = expectStale("stale fenced_update",
                    () -> fencedUpdate(c, "ex_java", a, key, "{\"stock\": 99}"));
            ok("stale fenced_update -> StaleTokenException(offered " + e.offered + ", hwm " + e.highWaterMark + ")",
                    e.offered == a && e.highWaterMark == b);
            // A loads the row (fence b) and writes it all back under its old
            // token: the echoed b carries a, which is refused as stale.
            e = expectStale("stale full-row UPDATE", () -> withToken(c, a, conn -> {
                Item i = load(conn, "SKU-001");
                i.stock = 99;
                return saveFullRow(conn, i);
            }));
            ok("stale full-row UPDATE echoing " + b + " under fencing.token " + a + " -> StaleTokenException " + e.getSQLState() + " (offered " + e.offered
                    + ", hwm " + e.highWaterMark + ") from getServerErrorMessage().getDetail()",
                    "TF001".equals(e.getSQLState()) && e.offered == a && e.highWaterMark == b);
            Item now = load(c, "SKU-001");
            ok("stock is B's: 7", now.stock == 7 && now.fence == b && "written by B".equals(now.note));
            call(c, "SELECT fencing_release(?, ?)", resource, b);

            long top = Long.MAX_VALUE;
            call(c, "SELECT fencing_resource_advance(?, ?)", resource + "-big", top - 1);
            long big = acquire(c, resource + "-big", "worker-c");
            ok("fencing_acquire handed out " + big, big == top);
            // No advance this time: the row still holds b, and the full-row
            // UPDATE echoes b under fencing.token = big (the echo rule).
            long echoed = withToken(c, big, conn -> {
                Item i = load(conn, "SKU-001");
                i.stock = 1;
                saveFullRow(conn, i);
                return i.fence;
            });
            ok("full-row UPDATE echoing " + echoed + " under fencing.token " + big + " stored "
                    + load(c, "SKU-001").fence + " exactly", echoed == b && load(c, "SKU-001").fence == top);
            e = expectStale("stale 9223372036854775806", () -> withToken(c, top - 1, conn -> {
                Item i = load(conn, "SKU-001");
                i.stock = 2;
                return saveFullRow(conn, i);
            }));
            ok("stale 9223372036854775806 -> StaleTokenException(offered " + e.offered + ", hwm "
                    + e.highWaterMark + ")", e.offered == top - 1 && e.highWaterMark == top);
            call(c, "SELECT fencing_release(?, ?)", resource + "-big", big);

            call(c, "SELECT fencing_protect('ex_java', require_token => true)");
            try {
                try {
                    call(c, "UPDATE ex_java SET stock = 0 WHERE item = 'SKU-001'");
                } catch (SQLException x) {
                    throw typed(x);
                }
                ok("write without a token refused", false);
            } catch (TokenRequiredException x) {
                ok("write without a token -> TokenRequiredException " + x.getSQLState(), true);
            }
            call(c, "DROP TABLE ex_java");
        } catch (SQLException e) {
            System.out.println("not ok - unexpected error " + e.getSQLState() + ": " + e.getMessage());
            System.exit(1);
        }
    }
}
