package fencing.jdbc;

import java.lang.management.ManagementFactory;
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
 * renewal is refused (expired, or a newer holder), and also when renewals keep failing until
 * safetyMargin before the TTL would run out, counted from before the last successful
 * acquire or renewal was sent: so it fires before the server lets another holder in. A
 * process paused past its TTL (GC, SIGSTOP) cannot signal during the pause; isLost() is true
 * from the moment it resumes, and the server refuses its late writes (StaleTokenException).
 */
public final class Lease implements AutoCloseable {
    private final Builder options;
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
    private boolean closed;

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

        /** How long before the TTL runs out a lease with failing renewals counts as lost. */
        public Builder safetyMargin(Duration margin) { this.safetyMargin = margin; return this; }

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
            if (safetyMargin == null)
                safetyMargin = ttl.dividedBy(10);
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

    /** Completes (with the reason) when the lease is lost; never completes exceptionally. */
    public CompletableFuture<LeaseLostException> lost() { return lost; }

    /** True once lost, and from the safety deadline on even before the watchdog has run. */
    public boolean isLost() {
        if (lostReason == null && System.nanoTime() - deadlineNanos >= 0)
            markLost("renewals did not land before the safety deadline", null);
        return lostReason != null;
    }

    /** Throws LeaseLostException when the lease is lost. */
    public void requireLive() throws LeaseLostException {
        if (isLost())
            throw lostReason;
    }

    /** Fencing.withToken(c, token(), work), refused with LeaseLostException once the lease is lost. */
    public <T> T transaction(Connection c, SqlWork<T> work) throws SQLException {
        requireLive();
        return Fencing.withToken(c, token(), work);
    }

    /** As transaction(c, work), under the token of one of the lease's resources. */
    public <T> T transaction(Connection c, String resource, SqlWork<T> work) throws SQLException {
        requireLive();
        return Fencing.withToken(c, token(resource), work);
    }

    public long fencedUpdate(Connection c, String table, String keyJson, String changesJson) throws SQLException {
        requireLive();
        return Fencing.fencedUpdate(c, table, token(), keyJson, changesJson);
    }

    public long fencedDelete(Connection c, String table, String keyJson) throws SQLException {
        requireLive();
        return Fencing.fencedDelete(c, table, token(), keyJson);
    }

    public long fencedUpsert(Connection c, String table, String rowJson) throws SQLException {
        requireLive();
        return Fencing.fencedUpsert(c, table, token(), rowJson);
    }

    /** fencing_check() for this lease's token: still current on the server (a check, not a fence). */
    public boolean check(Connection c) throws SQLException {
        return Fencing.check(c, resource(), token(), options.namespace);
    }

    /**
     * Stops renewing and releases the lease. Idempotent. A lost lease is released too: if the
     * server still has it live (renewals failed), that lets the next holder in; a stale token's
     * release changes nothing.
     */
    @Override
    public void close() throws SQLException {
        synchronized (this) {
            if (closed)
                return;
            closed = true;
            cancelTimers();
        }
        try {
            release();
        } finally {
            shutdown();
        }
    }

    // ------------------------------------------------------------------ internals

    private boolean start() throws SQLException {
        long sent = System.nanoTime();
        long[] issued;
        try {
            issued = resources.size() == 1 ? acquireOne() : Fencing.acquireAll(conn(), resources, options.holder,
                    options.ttl, options.wait, options.namespace);
        } catch (SQLException e) {
            dropConnection();
            throw Fencing.translate(e);
        }
        if (issued == null)
            return false;
        tokens = issued;
        if (options.wait != null) {
            // The server granted the lease somewhere within the wait, so the send time is no
            // bound on its expiry: renew at once and count from that request instead.
            sent = System.nanoTime();
            try {
                if (!renewStatement(options.ttl.toMillis()))
                    return false;
            } catch (SQLException e) {
                try {
                    release();
                } catch (SQLException r) {
                    e.addSuppressed(r);
                }
                dropConnection();
                throw Fencing.translate(e);
            }
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
        watchdog = scheduler.schedule(() -> {
            if (System.nanoTime() - deadlineNanos >= 0)
                markLost("renewals did not land before the safety deadline", null);
        }, Math.max(0, delay), TimeUnit.NANOSECONDS);
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
        long sent = System.nanoTime();
        try {
            long left = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - sent);
            if (!renewStatement(left)) {
                markLost("the server refused the renewal: the lease expired or a newer holder took it", null);
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
                markLost("renewals did not land before the safety deadline", null);
        } catch (SQLException e) {
            dropConnection();
            if (options.listener != null)
                options.listener.renewalFailed(this, e);
            synchronized (this) {
                scheduleRenewal(options.renewInterval.dividedBy(4));
            }
        } catch (RuntimeException e) {
            markLost("the renewal failed: " + e, e);
        }
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
            // A renewal that cannot land before the deadline is useless: bound it.
            ps.setQueryTimeout((int) Math.max(1, timeoutMs / 1000));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    private void release() throws SQLException {
        if (tokens == null)
            return;
        Connection c = conn();
        try (PreparedStatement ps = c.prepareStatement(Fencing.qualify(c,
                "SELECT pg_catalog.count(*) FROM ROWS FROM (pg_catalog.unnest(?::pg_catalog.text[]), pg_catalog.unnest(?::pg_catalog.int8[])) AS x(r, t) "
                        + "WHERE @fencing_release(x.r, x.t, ?)"))) {
            bindResources(c, ps, 1);
            ps.setString(3, options.namespace);
            ps.execute();
        }
    }

    private void bindResources(Connection c, PreparedStatement ps, int at) throws SQLException {
        ps.setArray(at, c.createArrayOf("text", resources.toArray()));
        ps.setArray(at + 1, c.createArrayOf("int8", Arrays.stream(tokens).boxed().toArray()));
    }

    /** Records the loss once; the listener runs before lost() completes, so awaiting it sees both. */
    private void markLost(String why, Throwable cause) {
        LeaseLostException reason;
        synchronized (this) {
            if (lostReason != null)
                return;
            String what = resources.size() == 1 ? "'" + resources.get(0) + "' (token " + tokens[0] + ")"
                    : resources + " (tokens " + Arrays.toString(tokens) + ")";
            reason = new LeaseLostException("lease on " + what + " lost: " + why, String.join(", ", resources),
                    tokens[0], cause);
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

    private static String defaultHolder() {
        return ManagementFactory.getRuntimeMXBean().getName() + "/" + UUID.randomUUID();
    }
}
