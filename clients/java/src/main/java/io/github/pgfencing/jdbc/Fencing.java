package io.github.pgfencing.jdbc;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.postgresql.PGResultSetMetaData;
import org.postgresql.PGStatement;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/**
 * Writing under a fencing token over JDBC, and the server's fencing errors as typed exceptions.
 * Every statement here binds tokens with setLong (bigint, which converts to fencing_token
 * implicitly) and reads them cast to bigint, so they are exact up to Long.MAX_VALUE over text
 * and binary transfer alike.
 */
public final class Fencing {
    private Fencing() {}

    /** The update script that adds a function this library calls. */
    static final String UPDATE_HINT = "ALTER EXTENSION fencing UPDATE";

    // TF001's DETAIL, from guard.cpp: "<where>: offered token T is below the high-water mark
    // H." or, strict, "... is not above the high-water mark H (strict: ...)." The key text is
    // everything before the last ": offered token", so a key containing that text still parses.
    private static final Pattern STALE_DETAIL = Pattern.compile(
            "^(.*): offered token (\\d+) is (below|not above) the high-water mark (\\d+)"
                    + "(?: \\(strict[^)]*\\))?\\.$",
            Pattern.DOTALL);

    /** The typed exception for a fencing error (TF001, TF002), else the error itself. */
    public static SQLException translate(SQLException e) {
        if (e instanceof StaleTokenException || e instanceof TokenRequiredException)
            return e;
        if ("TF001".equals(e.getSQLState()))
            return stale(e);
        if ("TF002".equals(e.getSQLState()))
            return new TokenRequiredException(e.getMessage(), e);
        return e;
    }

    private static StaleTokenException stale(SQLException e) {
        ServerErrorMessage m = e instanceof PSQLException ? ((PSQLException) e).getServerErrorMessage() : null;
        String schema = m == null ? null : m.getSchema();
        String table = m == null ? null : m.getTable();
        String detail = m == null ? null : m.getDetail();
        Matcher d = STALE_DETAIL.matcher(detail == null ? "" : detail);
        if (!d.matches())
            return new StaleTokenException(e.getMessage(), schema, table, null, null, null, false, e);
        return new StaleTokenException(e.getMessage(), schema, table, d.group(1),
                Long.parseLong(d.group(2)), Long.parseLong(d.group(4)), d.group(3).equals("not above"), e);
    }

    /** A check run before COMMIT: throws to roll back instead. */
    @FunctionalInterface
    public interface Check {
        void run() throws SQLException;
    }

    /**
     * Runs work in one transaction that carries token (SET LOCAL fencing.token = 'token', its own
     * statement), and commits it. The connection must be in autoCommit mode: it is switched
     * off for the work and back on afterwards, so no write of the work can run outside the
     * token's transaction and the token cannot outlive it. A connection with autoCommit off is
     * inside the caller's transaction: TransactionInProgressException, nothing sent (the library
     * never joins, commits or rolls back a transaction it did not begin). Any error rolls the
     * transaction back and is rethrown translated. A statement of the work that failed while the
     * work went on (its SQLException caught) has aborted the transaction, whose commit pgjdbc
     * may report as a success while the server rolls it back: TransactionAbortedException
     * (25P02) instead, rolled back.
     */
    public static <T> T withToken(Connection c, long token, SqlWork<T> work) throws SQLException {
        return withToken(c, token, work, null);
    }

    /**
     * The token for the current transaction as a literal SET LOCAL, because Citus forwards SET
     * LOCAL to its workers (with citus.propagate_set_commands = 'local') and never set_config().
     * SET takes no parameters, so the value is formatted from the long; a plain Statement with
     * prepareThreshold 0 is never server-prepared, whatever the connection's threshold, so no
     * statement is prepared per token value.
     */
    static void setLocalToken(Connection c, long token) throws SQLException {
        try (Statement st = c.createStatement()) {
            if (st.isWrapperFor(PGStatement.class))
                st.unwrap(PGStatement.class).setPrepareThreshold(0);
            st.execute("SET LOCAL fencing.token = '" + token + "'");
        }
    }

    /** As withToken(c, token, work), with beforeCommit run before COMMIT (throwing: rollback). */
    public static <T> T withToken(Connection c, long token, SqlWork<T> work, Check beforeCommit) throws SQLException {
        if (!c.getAutoCommit())
            throw new TransactionInProgressException("the connection has autoCommit off: it is inside the caller's "
                    + "transaction, which the fencing token's transaction must not join (commit it first, or use "
                    + "SET LOCAL fencing.token in it yourself)");
        c.setAutoCommit(false);
        try {
            setLocalToken(c, token);
            T result = work.run(c);
            if (beforeCommit != null)
                beforeCommit.run();
            refuseAborted(c);
            c.commit();
            return result;
        } catch (SQLException e) {
            rollbackQuietly(c, e);
            throw translate(e);
        } catch (RuntimeException e) {
            rollbackQuietly(c, e);
            throw e;
        } finally {
            if (!c.isClosed())
                c.setAutoCommit(true);
        }
    }

    private static void refuseAborted(Connection c) throws SQLException {
        if (PgjdbcState.aborted(c))
            throw new TransactionAbortedException("a statement in the transaction failed and its error was caught: "
                    + "the transaction is aborted and was rolled back, nothing of it committed");
    }

    /**
     * Whether the transaction is aborted: from pgjdbc's own transaction state where this pgjdbc
     * has it (an internal API), else by asking the server (a statement in an aborted transaction
     * fails with 25P02).
     */
    static final class PgjdbcState {
        private static volatile boolean internalsUsable = true;

        static boolean aborted(Connection c) throws SQLException {
            if (internalsUsable && !Boolean.getBoolean("io.github.pgfencing.jdbc.probeAborted")) {
                try {
                    if (c.isWrapperFor(org.postgresql.core.BaseConnection.class))
                        return c.unwrap(org.postgresql.core.BaseConnection.class).getTransactionState()
                                == org.postgresql.core.TransactionState.FAILED;
                } catch (LinkageError e) {
                    internalsUsable = false; // a pgjdbc without them: ask the server from now on
                }
            }
            return probeAborted(c);
        }

        static boolean probeAborted(Connection c) throws SQLException {
            try (java.sql.Statement st = c.createStatement()) {
                st.execute("SELECT 1");
                return false;
            } catch (SQLException e) {
                if ("25P02".equals(e.getSQLState()))
                    return true;
                throw e;
            }
        }
    }

    private static void rollbackQuietly(Connection c, Exception cause) {
        try {
            c.rollback();
        } catch (SQLException r) {
            cause.addSuppressed(r);
        }
    }

    /**
     * fenced_update(): one atomic, fenced UPDATE. Returns the rows written. When none was
     * written because the token is stale (not because no row matches), throws
     * StaleTokenException with the mark that refused it. From 1.5 that comes from the same
     * call (fenced_update_result); on older SQL, from the key's mark read after the call,
     * which explains the outcome and decides nothing.
     */
    public static long fencedUpdate(Connection c, String table, long token, String keyJson, String changesJson)
            throws SQLException {
        return fenced(c, "fenced_update", table, token, keyJson, keyJson, changesJson);
    }

    /** fenced_delete(): as fencedUpdate, for DELETE. */
    public static long fencedDelete(Connection c, String table, long token, String keyJson) throws SQLException {
        return fenced(c, "fenced_delete", table, token, keyJson, keyJson);
    }

    /**
     * fenced_upsert(): INSERT ... ON CONFLICT DO UPDATE where the token allows; rows written.
     * A stale conflicting row is StaleTokenException (from 1.5; on older SQL, 0 rows).
     */
    public static long fencedUpsert(Connection c, String table, long token, String rowJson) throws SQLException {
        return fenced(c, "fenced_upsert", table, token, null, rowJson);
    }

    private static long fenced(Connection c, String function, String table, long token, String keyJson,
            String... json) throws SQLException {
        String casts = json.length == 2 ? "?::pg_catalog.jsonb, ?::pg_catalog.jsonb" : "?::pg_catalog.jsonb";
        boolean result = info(c).hasFencedResult;
        String sql = result
                ? "SELECT r.written, r.stale, r.hwm::pg_catalog.int8, n.nspname, t.relname FROM @" + function
                        + "_result(?::pg_catalog.regclass, ?, " + casts + ") r, pg_catalog.pg_class t "
                        + "JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) t.relnamespace "
                        + "WHERE t.oid OPERATOR(pg_catalog.=) ?::pg_catalog.regclass"
                : "SELECT @" + function + "(?::pg_catalog.regclass, ?, " + casts + ")";
        try (PreparedStatement ps = c.prepareStatement(qualify(c, sql))) {
            ps.setString(1, table);
            ps.setLong(2, token);
            for (int i = 0; i < json.length; i++)
                ps.setString(3 + i, json[i]);
            if (result)
                ps.setString(3 + json.length, table);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                long written = rs.getLong(1);
                if (!result) {
                    if (written == 0 && keyJson != null)
                        diagnoseZero(c, function, table, token, keyJson);
                    return written;
                }
                long stale = rs.getLong(2);
                long hwm = rs.getLong(3);
                // Any stale row, also beside rows written (a key that is not the whole primary
                // key), as the other libraries do. A mark equal to the token refused it: strict.
                if (stale > 0)
                    throw new StaleTokenException(function + "() wrote " + written + " rows, refused " + stale
                            + " as stale: offered token " + token + (hwm == token ? " is not above" : " is below")
                            + " the high-water mark " + hwm, rs.getString(4), rs.getString(5),
                            keyJson != null ? "Key " + keyJson : "Row " + json[0], token, hwm, hwm == token, null);
                return written;
            }
        } catch (SQLException e) {
            throw translate(e);
        }
    }

    private static void diagnoseZero(Connection c, String function, String table, long token, String keyJson)
            throws SQLException {
        String[] name;
        long hwm;
        try (PreparedStatement ps = c.prepareStatement(qualify(c,
                "SELECT n.nspname, r.relname, @fencing_high_water(r.oid, ?::pg_catalog.jsonb)::pg_catalog.int8 "
                        + "FROM pg_catalog.pg_class r JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) r.relnamespace "
                        + "WHERE r.oid OPERATOR(pg_catalog.=) ?::pg_catalog.regclass"))) {
            ps.setString(1, keyJson);
            ps.setString(2, table);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next())
                    return;
                name = new String[] {rs.getString(1), rs.getString(2)};
                hwm = rs.getLong(3);
            }
        }
        if (hwm > token)
            throw new StaleTokenException(function + "() wrote 0 rows: offered token " + token
                    + " is below the high-water mark " + hwm, name[0], name[1], "Key " + keyJson, token, hwm, false, null);
    }

    /** fencing_check(): whether token is still the current one for the resource. A check, not a fence. */
    public static boolean check(Connection c, String resource, long token, String namespace) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(qualify(c, "SELECT @fencing_check(?, ?, ?)"))) {
            ps.setString(1, resource);
            ps.setLong(2, token);
            ps.setString(3, namespace);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        } catch (SQLException e) {
            throw missingFunction(e, "fencing_check");
        }
    }

    /**
     * fencing_acquire_all(): leases on every resource, all or none (the server takes them in an
     * order that cannot deadlock). Returns the tokens in the order of resources, or null when not
     * all could be acquired within wait (null wait: no waiting).
     */
    public static long[] acquireAll(Connection c, List<String> resources, String holder, Duration ttl, Duration wait,
            String namespace) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(qualify(c,
                "SELECT @fencing_acquire_all(?, ?, ?::pg_catalog.interval, ?::pg_catalog.interval, ?)::pg_catalog.int8[]"))) {
            Array names = c.createArrayOf("text", resources.toArray());
            ps.setArray(1, names);
            ps.setString(2, holder);
            ps.setString(3, interval(ttl));
            ps.setString(4, wait == null ? null : interval(wait));
            ps.setString(5, namespace);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                Array a = rs.getArray(1);
                if (a == null)
                    return null;
                Object[] tokens = (Object[]) a.getArray();
                long[] out = new long[tokens.length];
                for (int i = 0; i < tokens.length; i++)
                    out[i] = ((Number) tokens[i]).longValue();
                return out;
            }
        } catch (SQLException e) {
            throw missingFunction(e, "fencing_acquire_all");
        }
    }

    /** 42883 for a function of this library: the installed SQL predates it. */
    private static SQLException missingFunction(SQLException e, String function) {
        if ("42883".equals(e.getSQLState()) && String.valueOf(e.getMessage()).contains(function))
            return new SQLException(function + "() is not installed in this database: its fencing SQL "
                    + "predates it (HINT: " + UPDATE_HINT + ")", "55000", e);
        return translate(e);
    }

    /**
     * A fencing_token column as a long, whichever format pgjdbc received it in: text, or binary
     * when the type's OID is listed in binaryTransferEnable (pgjdbc 42.5 accepts OIDs only there
     * and does not decode the type: getLong fails and getString returns null on such a column).
     * Null for SQL NULL.
     */
    public static Long getToken(ResultSet rs, int column) throws SQLException {
        int format = rs.getMetaData().unwrap(PGResultSetMetaData.class).getFormat(column);
        if (format == 1) {
            byte[] b = rs.getBytes(column);
            if (b == null)
                return null;
            if (b.length != 8)
                throw new SQLException("a binary fencing_token has 8 bytes, not " + b.length, "22P03");
            long v = 0;
            for (byte x : b)
                v = (v << 8) | (x & 0xff);
            return v;
        }
        String s = rs.getString(column);
        return s == null ? null : Long.parseLong(s);
    }

    /** The OID of fencing_token in this database, for binaryTransferEnable. */
    public static int tokenTypeOid(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(qualify(c, "SELECT '@fencing_token'::pg_catalog.regtype::pg_catalog.oid::pg_catalog.int4"));
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        }
    }

    static String interval(Duration d) {
        return d.toMillis() + " milliseconds";
    }

    /** Replaces "@name" with the extension's schema, so no search_path entry can shadow it. */
    static String qualify(Connection c, String sql) throws SQLException {
        return sql.replace("@", quoteIdent(extensionSchema(c)) + ".");
    }

    /** What the installed fencing SQL offers, looked up once per connection. */
    static final class ExtensionInfo {
        final String schema;
        final boolean hasFencedResult;

        ExtensionInfo(String schema, boolean hasFencedResult) {
            this.schema = schema;
            this.hasFencedResult = hasFencedResult;
        }
    }

    private static final java.util.Map<Connection, ExtensionInfo> INFO =
            java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());

    static String extensionSchema(Connection c) throws SQLException {
        return info(c).schema;
    }

    static ExtensionInfo info(Connection c) throws SQLException {
        ExtensionInfo i = INFO.get(c);
        if (i != null)
            return i;
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT n.nspname, EXISTS (SELECT FROM pg_catalog.pg_proc p WHERE p.pronamespace OPERATOR(pg_catalog.=) n.oid "
                        + "AND p.proname OPERATOR(pg_catalog.=) 'fenced_update_result') "
                        + "FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n "
                        + "ON n.oid OPERATOR(pg_catalog.=) e.extnamespace WHERE e.extname OPERATOR(pg_catalog.=) 'fencing'");
                ResultSet rs = ps.executeQuery()) {
            if (!rs.next())
                throw new SQLException("the fencing extension is not installed in this database "
                        + "(HINT: CREATE EXTENSION fencing)", "55000");
            i = new ExtensionInfo(rs.getString(1), rs.getBoolean(2));
        }
        INFO.put(c, i);
        return i;
    }

    static String quoteIdent(String s) {
        return "\"" + s.replace("\"", "\"\"") + "\"";
    }
}
