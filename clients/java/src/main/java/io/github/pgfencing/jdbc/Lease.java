package io.github.pgfencing.jdbc;

import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * A lease from fencing_acquire(), renewed in the background, released on close.
 *
 * <pre>
 * try (Lease lease = Lease.builder(source).resource("orders").ttl(Duration.ofSeconds(10)).acquire()) {
 *     lease.transaction(conn, c -&gt; { ... plain UPDATE/INSERT/DELETE ...; return null; });
 * }
 * </pre>
 *
 * The lease holds one connection of its own (from the ConnectionSource) for acquire, renew and
 * release. Renewals run every renewInterval (default ttl/3), shortened by up to jitter so that
 * holders do not renew in step. The lost signal (listener, lost() future, isLost()) fires when a
 * renewal is refused (reason REFUSED), and when no renewal was confirmed within ttl - margin
 * counted from the send time of the call that last set the expiry (reason EXPIRED): so it
 * fires before the server lets another holder in, and never for a lease the server extended
 * in time (after a waited acquire the lease renews at once and counts from that renewal). A
 * process paused past its TTL (GC, SIGSTOP) cannot signal during the pause; isLost() is true
 * from the moment it resumes, and the server refuses its late writes (StaleTokenException).
 * After release() or close() the lease is CLOSED: nothing starts or commits under it
 * (LeaseClosedException), and lost() completes exceptionally with LeaseClosedException unless
 * the lease was lost before.
 */
public final class Lease implements AutoCloseable {
    /** What the lease can be used for: only a HELD lease writes. CLOSED wins over LOST. */
    public enum State { HELD, LOST, CLOSED }

    private final Builder options;
    /** Guards the lease's connection: a renewal and the release never run on it at once. */
    private final Object connLock = new Object();
    private final ScheduledExecutorService scheduler;
    private final boolean ownScheduler;
    private final CompletableFuture<LeaseLostException> lost = new CompletableFuture<>();
    private final List<String> resources;
    private long[] tokens;
    private Connection connection;
    private volatile long deadlineNanos;
    private volatile LeaseLostException lostReason;
    private ScheduledFuture<?> renewal;
    private ScheduledFuture<?> watchdog;
    private volatile boolean closed;

    private Lease(Builder options) {
        this.options = options;
        this.resources = options.resources;
        this.ownScheduler = options.scheduler == null;
        this.scheduler = ownScheduler ? newScheduler(String.join(",", options.resources)) : options.scheduler;
    }

    public static Builder builder(ConnectionSource source) {
        return new Builder(source);
    }

    /** Options; acquire() or tryAcquire() makes the lease. */
    public static final class Builder {
        private final ConnectionSource source;
        private List<String> resources;
        private String holder = defaultHolder();
        private String namespace = "default";
        private Duration ttl = Duration.ofSeconds(30);
        private Duration wait;
        private Duration renewInterval;
        private double jitter = 0.2;
        private Duration safetyMargin;
        private LeaseListener listener;
        private ScheduledExecutorService scheduler;

        private Builder(ConnectionSource source) {
            this.source = Objects.requireNonNull(source, "source");
        }

        public Builder resource(String resource) { this.resources = List.of(resource); return this; }

        /**
         * Several resources in one lease, all or none (fencing_acquire_all, from 1.5: the server
         * takes them in an order that cannot deadlock); renewed together, lost together.
         */
        public Builder resources(List<String> resources) { this.resources = List.copyOf(resources); return this; }

        public Builder holder(String holder) { this.holder = holder; return this; }

        public Builder namespace(String namespace) { this.namespace = namespace; return this; }

        public Builder ttl(Duration ttl) { this.ttl = ttl; return this; }

        /** How long acquire() waits for another holder's lease to end; null (default): not at all. */
        public Builder waitFor(Duration wait) { this.wait = wait; return this; }

        public Builder renewInterval(Duration interval) { this.renewInterval = interval; return this; }

        /** Fraction (0 to 0.5) by which each renewal comes earlier, at random. */
        public Builder jitter(double jitter) { this.jitter = jitter; return this; }

        /**
         * How long before the TTL runs out a lease without a confirmed renewal counts as lost;
         * default max(ttl/5, 50 ms).
         */
        public Builder margin(Duration margin) { this.safetyMargin = margin; return this; }

        /** The same as margin(margin). */
        public Builder safetyMargin(Duration margin) { return margin(margin); }

        public Builder listener(LeaseListener listener) { this.listener = listener; return this; }

        /** A scheduler to renew on (not shut down by the lease); default: one thread per lease. */
        public Builder scheduler(ScheduledExecutorService scheduler) { this.scheduler = scheduler; return this; }

        /** The lease; LeaseUnavailableException when another holder's lease stayed live. */
        public Lease acquire() throws SQLException {
            Lease lease = tryAcquire();
            if (lease == null)
                throw new LeaseUnavailableException("the lease on " + resources + " (namespace '" + namespace
                        + "') is held by another holder" + (wait == null ? "" : " for all of " + wait));
            return lease;
        }

        /** The lease, or null when another holder's lease stayed live. */
        public Lease tryAcquire() throws SQLException {
            validate();
            Lease lease = new Lease(this);
            boolean ok = false;
            try {
                ok = lease.start();
                return ok ? lease : null;
            } finally {
                if (!ok)
                    lease.shutdown();
            }
        }

        private void validate() {
            if (resources == null || resources.isEmpty())
                throw new IllegalArgumentException("no resource given");
            Objects.requireNonNull(holder, "holder");
            Objects.requireNonNull(namespace, "namespace");
            if (ttl == null || ttl.toMillis() < 100)
                throw new IllegalArgumentException("ttl must be at least 100 ms");
            if (jitter < 0 || jitter > 0.5)
                throw new IllegalArgumentException("jitter must be between 0 and 0.5");
            if (renewInterval == null)
                renewInterval = ttl.dividedBy(3);
            if (safetyMargin == null) {
                safetyMargin = ttl.dividedBy(5);
                if (safetyMargin.toMillis() < 50)
                    safetyMargin = Duration.ofMillis(50);
            }
            if (renewInterval.plus(safetyMargin).compareTo(ttl) >= 0)
                throw new IllegalArgumentException("renewInterval + safetyMargin must be below ttl");
        }
    }

    /** The token of a one-resource lease. */
    public long token() {
        if (tokens.length != 1)
            throw new IllegalStateException("this lease holds " + resources + ": name the resource");
        return tokens[0];
    }

    /** The token for one of the lease's resources. */
    public long token(String resource) {
        int i = resources.indexOf(resource);
        if (i < 0)
            throw new IllegalArgumentException(resource + " is not one of " + resources);
        return tokens[i];
    }

    /** The tokens, in the order of resources(). */
    public long[] tokens() { return tokens.clone(); }

    /** The resource of a one-resource lease. */
    public String resource() {
        if (resources.size() != 1)
            throw new IllegalStateException("this lease holds " + resources);
        return resources.get(0);
    }

    public List<String> resources() { return resources; }

    public String namespace() { return options.namespace; }

    public String holder() { return options.holder; }

    /**
     * Completes with the reason when the lease is lost (once; the listener has run by then).
     * After release() or close() of a lease that was not lost, completes exceptionally with
     * LeaseClosedException: the lease can no longer be lost, and nobody waits forever.
     */
    public CompletableFuture<LeaseLostException> lost() { return lost; }

    /**
     * True once declared lost (and stays true after close); checks the deadline first, so it is
     * true from the safety deadline on even before the watchdog has run.
     */
    public boolean isLost() {
        checkDeadline();
        return lostReason != null;
    }

    /** True after release() or close(). */
    public boolean isClosed() { return closed; }

    /** HELD, LOST or CLOSED (closed wins over lost); checks the deadline first. */
    public State state() {
        checkDeadline();
        return closed ? State.CLOSED : lostReason != null ? State.LOST : State.HELD;
    }

    /** Why the lease was lost, or null. */
    public LeaseLostException lostReason() {
        checkDeadline();
        return lostReason;
    }

    private void checkDeadline() {
        if (lostReason == null && !closed && System.nanoTime() - deadlineNanos >= 0)
            markLost(LeaseLostException.Reason.EXPIRED, "no renewal was confirmed within ttl - margin", null);
    }

    /** Throws LeaseClosedException after release/close, LeaseLostException when lost. */
    public void requireLive() throws SQLException {
        State s = state();
        if (s == State.CLOSED)
            throw closedException();
        if (s == State.LOST)
            throw lostReason;
    }

    private LeaseClosedException closedException() {
        return new LeaseClosedException("the lease on " + resources + " (tokens " + Arrays.toString(tokens)
                + ") was released or closed", resources, tokens);
    }

    /**
     * Fencing.withToken(c, token(), work) under this lease: refused before BEGIN and rolled back
     * before COMMIT when the lease is not held then (LeaseLostException, LeaseClosedException);
     * a connection with autoCommit off (the caller's transaction) is refused with
     * TransactionInProgressException.
     */
    public <T> T transaction(Connection c, SqlWork<T> work) throws SQLException {
        return transaction(c, null, work);
    }

    /** As transaction(c, work), under the token of one of the lease's resources. */
    public <T> T transaction(Connection c, String resource, SqlWork<T> work) throws SQLException {
        requireLive();
        long token = resource == null ? token() : token(resource);
        try {
            return Fencing.withToken(c, token, work, this::requireLive);
        } catch (SQLException e) {
            throw takenOver(e);
        }
    }

    /**
     * The LeaseTakenOverException for an exception that ended a write under this lease, else e
     * (CONTRACT.md section 4a). TF003: the server says so; the lease is declared lost (TAKEOVER)
     * unless it already was. 57P01 only once the lease is lost (deadline checked first): on a held
     * lease it is a plain shutdown or pg_terminate_backend(), and the lease stays held.
     */
    SQLException takenOver(SQLException e) {
        String code = null;
        for (Throwable t = e; t != null && code == null; t = t.getCause()) {
            if (t instanceof SQLException) {
                String s = ((SQLException) t).getSQLState();
                code = "TF003".equals(s) || "57P01".equals(s) ? s : null;
            }
        }
        if ("TF003".equals(code))
            markLost(LeaseLostException.Reason.TAKEOVER,
                    "another holder's acquire took the lease over and ended a write under its token", e);
        else if (code == null || state() != State.LOST)
            return e;
        return new LeaseTakenOverException("the lease on " + resources + " (tokens " + Arrays.toString(tokens)
                + ") was taken over: the server ended the write (" + code + ")", code, resources, tokens, e);
    }

    public long fencedUpdate(Connection c, String table, String keyJson, String changesJson) throws SQLException {
        requireLive();
        try {
            return Fencing.fencedUpdate(c, table, token(), keyJson, changesJson);
        } catch (SQLException e) {
            throw takenOver(e);
        }
    }

    public long fencedDelete(Connection c, String table, String keyJson) throws SQLException {
        requireLive();
        try {
            return Fencing.fencedDelete(c, table, token(), keyJson);
        } catch (SQLException e) {
            throw takenOver(e);
        }
    }

    public long fencedUpsert(Connection c, String table, String rowJson) throws SQLException {
        requireLive();
        try {
            return Fencing.fencedUpsert(c, table, token(), rowJson);
        } catch (SQLException e) {
            throw takenOver(e);
        }
    }

    /** fencing_check() for this lease's token: still current on the server (a check, not a fence). */
    public boolean check(Connection c) throws SQLException {
        return Fencing.check(c, resource(), token(), options.namespace);
    }

    /**
     * Stops renewing (a renewal in flight is waited for, bounded by its own timeout), then sends
     * fencing_release for the lease's tokens, bounded by max(ttl/3, 1 s). From then on the lease
     * is CLOSED. A lost lease is released too (if the server still has it live, the next holder
     * gets in sooner; it cannot end a successor's lease) and stays lost; no lost signal fires.
     * Returns whether the server ended a live lease; false for a second call, a lost lease
     * whose successor holds it, or a connection error (the server ends the lease at its TTL).
     * Never throws.
     */
    public boolean release() {
        synchronized (this) {
            if (closed)
                return false;
            closed = true;
            cancelTimers();
        }
        lost.completeExceptionally(closedException());
        // A renewal in flight holds connLock: it is waited for (bounded by its own query
        // timeout, the safe time left), never run beside the release on the same connection.
        synchronized (connLock) {
            try {
                return releaseStatement();
            } catch (SQLException e) {
                dropConnection();
                return false;
            }
        }
    }

    /** release() when not yet released, then closes the lease's connection. Idempotent. */
    @Override
    public void close() {
        try {
            release();
        } finally {
            synchronized (connLock) {
                shutdown();
            }
        }
    }

    // ------------------------------------------------------------------ internals

    private boolean start() throws SQLException {
        long sent;
        long[] issued;
        try {
            // The base is the send time of the acquire itself: measured once the connection
            // (and the extension's schema) is there, not before connecting.
            Fencing.extensionSchema(conn());
            sent = System.nanoTime();
            issued = resources.size() == 1 ? acquireOne() : Fencing.acquireAll(conn(), resources, options.holder,
                    options.ttl, options.wait, options.namespace);
        } catch (SQLException e) {
            dropConnection();
            throw Fencing.translate(e);
        }
        if (issued == null)
            return false;
        tokens = issued;
        if (options.wait != null || System.nanoTime() - sent > options.safetyMargin.toNanos() / 2) {
            // The server granted the lease at some moment after the send, unknown when, and
            // counts its TTL from then: renew at once and count from that renewal's send time.
            // A renewal that fails on an error leaves the base at the acquire's send time
            // (early, never late) and the background renewal goes on.
            long renewSent = System.nanoTime();
            boolean renewed;
            try {
                Fencing.extensionSchema(conn());
                renewSent = System.nanoTime();
                renewed = renewStatement(options.ttl.toMillis());
            } catch (SQLException e) {
                dropConnection();
                renewed = true;
                renewSent = sent;
            }
            if (!renewed) {
                releaseQuietly();
                dropConnection();
                throw new LeaseLostException("lease on " + resources + " lost: the renewal right after the grant "
                        + "was refused", resources, tokens, LeaseLostException.Reason.REFUSED, null);
            }
            sent = renewSent;
        }
        synchronized (this) {
            extendDeadline(sent);
            scheduleRenewal(options.renewInterval);
        }
        return true;
    }

    private long[] acquireOne() throws SQLException {
        Connection c = conn();
        try (PreparedStatement ps = c.prepareStatement(Fencing.qualify(c,
                "SELECT @fencing_acquire(?, ?, ?::pg_catalog.interval, ?::pg_catalog.interval, ?)::pg_catalog.int8"))) {
            ps.setString(1, resources.get(0));
            ps.setString(2, options.holder);
            ps.setString(3, Fencing.interval(options.ttl));
            ps.setString(4, options.wait == null ? null : Fencing.interval(options.wait));
            ps.setString(5, options.namespace);
            // Bounded by wait + 5 s: a cancelled acquire holds nothing (the transaction rolls back).
            ps.setQueryTimeout((int) Math.min(Integer.MAX_VALUE,
                    (options.wait == null ? 0 : options.wait.toSeconds()) + 5));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                long v = rs.getLong(1);
                return rs.wasNull() ? null : new long[] {v};
            }
        }
    }

    private Connection conn() throws SQLException {
        if (connection == null || connection.isClosed()) {
            connection = options.source.open();
            connection.setAutoCommit(true);
            // No named server-side prepared statements on the lease's connection: safe behind a
            // transaction-mode pooler that does not track them (PgBouncer before 1.21).
            if (connection.isWrapperFor(org.postgresql.PGConnection.class))
                connection.unwrap(org.postgresql.PGConnection.class).setPrepareThreshold(0);
        }
        return connection;
    }

    private void dropConnection() {
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException ignored) {
                // the connection is broken already; a renewal opens a new one
            }
            connection = null;
        }
    }

    /** Called with this locked: the deadline is measured from before the request was sent. */
    private void extendDeadline(long sentNanos) {
        deadlineNanos = sentNanos + options.ttl.minus(options.safetyMargin).toNanos();
        if (watchdog != null)
            watchdog.cancel(false);
        long delay = deadlineNanos - System.nanoTime();
        watchdog = scheduler.schedule(this::checkDeadline, Math.max(0, delay), TimeUnit.NANOSECONDS);
    }

    private void scheduleRenewal(Duration after) {
        if (closed || lostReason != null)
            return;
        double shorten = options.jitter * ThreadLocalRandom.current().nextDouble();
        long delay = (long) (after.toNanos() * (1.0 - shorten));
        renewal = scheduler.schedule(this::renewOnce, delay, TimeUnit.NANOSECONDS);
    }

    private void renewOnce() {
        if (closed || lostReason != null)
            return;
        long sent;
        boolean renewed;
        try {
            synchronized (connLock) {
                if (closed)
                    return;
                // Connect first (after an error the connection is new): the base is the send
                // time of the renewal itself.
                Fencing.extensionSchema(conn());
                sent = System.nanoTime();
                // Bounded by the safe time left: cancelled at the deadline (a confirmation after
                // it counts as lost below anyway, and a renewal that lands on the server after
                // the lease was declared lost would keep the next holder out).
                renewed = renewStatement(TimeUnit.NANOSECONDS.toMillis(deadlineNanos - sent));
            }
        } catch (SQLException e) {
            synchronized (connLock) {
                dropConnection();
            }
            if (closed)
                return;
            if (options.listener != null)
                options.listener.renewalFailed(this, e);
            synchronized (this) {
                scheduleRenewal(options.renewInterval.dividedBy(8));
            }
            return;
        } catch (RuntimeException e) {
            synchronized (this) {
                scheduleRenewal(options.renewInterval.dividedBy(8));
            }
            return;
        }
        if (!renewed) {
            markLost(LeaseLostException.Reason.REFUSED,
                    "the server refused the renewal: the lease expired or a newer holder took it", null);
            return;
        }
        boolean late;
        synchronized (this) {
            if (closed || lostReason != null)
                return;
            // Landed after the deadline, which already counts as lost.
            late = System.nanoTime() - deadlineNanos >= 0;
            if (!late) {
                extendDeadline(sent);
                scheduleRenewal(options.renewInterval);
            }
        }
        if (late)
            markLost(LeaseLostException.Reason.EXPIRED, "no renewal was confirmed within ttl - margin", null);
    }

    /**
     * fencing_renew() of every resource (all rows are renewed: bool_and reads them all); false
     * when the server refused any. Bounded by timeoutMs (at least 1 s).
     */
    private boolean renewStatement(long timeoutMs) throws SQLException {
        Connection c = conn();
        try (PreparedStatement ps = c.prepareStatement(Fencing.qualify(c,
                "SELECT pg_catalog.bool_and(@fencing_renew(x.r, x.t, ?::pg_catalog.interval, ?)) "
                        + "FROM ROWS FROM (pg_catalog.unnest(?::pg_catalog.text[]), pg_catalog.unnest(?::pg_catalog.int8[])) AS x(r, t)"))) {
            ps.setString(1, Fencing.interval(options.ttl));
            ps.setString(2, options.namespace);
            bindResources(c, ps, 3);
            // A renewal that cannot land before the deadline is useless: cancel it then
            // (JDBC's own query timeout counts whole seconds only).
            ScheduledFuture<?> cancel = scheduler.schedule(() -> {
                try {
                    ps.cancel();
                } catch (SQLException ignored) {
                    // the statement finished meanwhile
                }
            }, Math.max(1, timeoutMs), TimeUnit.MILLISECONDS);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            } finally {
                cancel.cancel(false);
            }
        }
    }

    /** fencing_release() of every token: whether the server ended a live lease. */
    private boolean releaseStatement() throws SQLException {
        if (tokens == null)
            return false;
        Connection c = conn();
        try (PreparedStatement ps = c.prepareStatement(Fencing.qualify(c,
                "SELECT pg_catalog.count(*) FROM ROWS FROM (pg_catalog.unnest(?::pg_catalog.text[]), pg_catalog.unnest(?::pg_catalog.int8[])) AS x(r, t) "
                        + "WHERE @fencing_release(x.r, x.t, ?)"))) {
            bindResources(c, ps, 1);
            ps.setString(3, options.namespace);
            ps.setQueryTimeout((int) Math.max(1, options.ttl.dividedBy(3).toSeconds()));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1) > 0;
            }
        }
    }

    private void releaseQuietly() {
        try {
            releaseStatement();
        } catch (SQLException ignored) {
            // the server ends the lease at its TTL
        }
    }

    private void bindResources(Connection c, PreparedStatement ps, int at) throws SQLException {
        ps.setArray(at, c.createArrayOf("text", resources.toArray()));
        ps.setArray(at + 1, c.createArrayOf("int8", Arrays.stream(tokens).boxed().toArray()));
    }

    /** Records the loss once, unless closed first; the listener runs before lost() completes. */
    private void markLost(LeaseLostException.Reason kind, String why, Throwable cause) {
        LeaseLostException reason;
        synchronized (this) {
            if (lostReason != null || closed)
                return;
            String what = resources.size() == 1 ? "'" + resources.get(0) + "' (token " + tokens[0] + ")"
                    : resources + " (tokens " + Arrays.toString(tokens) + ")";
            reason = new LeaseLostException("lease on " + what + " lost: " + why, resources, tokens, kind, cause);
            lostReason = reason;
            cancelTimers();
        }
        try {
            if (options.listener != null)
                options.listener.leaseLost(this, reason);
        } finally {
            lost.complete(reason);
        }
    }

    private void cancelTimers() {
        if (renewal != null)
            renewal.cancel(false);
        if (watchdog != null)
            watchdog.cancel(false);
    }

    private void shutdown() {
        dropConnection();
        if (ownScheduler)
            scheduler.shutdownNow();
    }

    private static ScheduledExecutorService newScheduler(String resource) {
        // Two threads: the watchdog fires on time even while a renewal hangs on the network.
        return Executors.newScheduledThreadPool(2, r -> {
            Thread t = new Thread(r, "fencing-lease-" + resource);
            t.setDaemon(true);
            return t;
        });
    }

    /** host:pid:random, as the other libraries. */
    private static String defaultHolder() {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            host = "localhost";
        }
        return host + ":" + ManagementFactory.getRuntimeMXBean().getPid() + ":"
                + UUID.randomUUID().toString().substring(0, 12);
    }
}
