package io.github.pgfencing.jdbc.test;

import io.github.pgfencing.jdbc.ConnectionSource;
import io.github.pgfencing.jdbc.Lease;
import io.github.pgfencing.jdbc.LeaseLostException;
import io.github.pgfencing.jdbc.StaleTokenException;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The holder that gets paused: acquires a lease, starts a write under it, and reports on
 * stdout what happened once it is resumed. The parent (TestMain) sends SIGSTOP while it sits
 * inside the write, holds it past the TTL, lets a new holder write, then sends SIGCONT.
 *   PausedHolder URL RESOURCE TTL_MS ROW_ID
 */
public final class PausedHolder {
    public static void main(String[] args) throws Exception {
        String url = args[0], resource = args[1];
        long ttlMs = Long.parseLong(args[2]);
        int row = Integer.parseInt(args[3]);
        Properties p = new Properties();
        p.setProperty("user", System.getProperty("pguser", "postgres"));
        ConnectionSource source = ConnectionSource.of(url, p);
        AtomicLong listenerAt = new AtomicLong();
        long start = System.nanoTime();
        try (Connection conn = source.open();
                Lease lease = Lease.builder(source).resource(resource).holder("paused-child")
                        .ttl(Duration.ofMillis(ttlMs))
                        .listener((l, why) -> listenerAt.set(System.nanoTime())).acquire()) {
            say("token " + lease.token());
            try {
                lease.transaction(conn, c -> {
                    say("in-write");
                    sleep(1500); // SIGSTOP lands here; the rest of the sleep is gone after SIGCONT
                    try (Statement s = c.createStatement()) {
                        s.executeUpdate("UPDATE items SET v = v + 1 WHERE id = " + row);
                    }
                    return null;
                });
                say("write committed");
            } catch (StaleTokenException e) {
                say("stale schema=" + e.getSchema() + " table=" + e.getTable() + " key=" + e.getKey()
                        + " offered=" + e.getOfferedToken() + " hwm=" + e.getHighWaterMark()
                        + " strict=" + e.isStrict());
            }
            LeaseLostException why = lease.lost().get(5, TimeUnit.SECONDS);
            say("lost isLost=" + lease.isLost() + " listener=" + (listenerAt.get() != 0) + " reason=" + why.getMessage());
            try {
                lease.transaction(conn, c -> null);
                say("transaction after lost: ran");
            } catch (LeaseLostException e) {
                say("transaction after lost: refused");
            }
        }
        say("done after " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) + " ms");
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
