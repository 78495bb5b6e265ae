package io.github.pgfencing.jdbc.test;

import io.github.pgfencing.jdbc.ConnectionSource;
import io.github.pgfencing.jdbc.Lease;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One worker of test/pooler/attack124.py's attack pass (ATTACK_WORKER, see
 * test/pooler/attack-libs.sh): takes turns on one lease through the pooler and writes under it,
 * as attack124.py's Python worker does, until END_EPOCH; prints one event a line (token, write,
 * lost, error). The application's connection sets prepareThreshold=0 when ATTACK_PGBOUNCER is 118
 * (PgBouncer before 1.21), else keeps pgjdbc's default.
 *   AttackWorker HOST PORT DBNAME USER RESOURCE WORKER TTL_SECONDS END_EPOCH
 */
public final class AttackWorker {
    private AttackWorker() {}

    private static void say(String... fields) {
        System.out.println(String.join(" ", fields));
        System.out.flush();
    }

    private static String now() {
        return String.format(java.util.Locale.ROOT, "%.3f", System.currentTimeMillis() / 1000.0);
    }

    public static void main(String[] a) throws Exception {
        String url = "jdbc:postgresql://" + a[0] + ":" + a[1] + "/" + a[2];
        Properties user = new Properties();
        user.setProperty("user", a[3]);
        Properties app = new Properties();
        app.putAll(user);
        if ("118".equals(System.getenv("ATTACK_PGBOUNCER")))
            app.setProperty("prepareThreshold", "0");
        String resource = a[4];
        Duration ttl = Duration.ofMillis((long) (Double.parseDouble(a[6]) * 1000));
        long end = (long) (Double.parseDouble(a[7]) * 1000);
        for (int k = 1; System.currentTimeMillis() < end; k++) {
            Lease lease = null;
            try (Connection c = DriverManager.getConnection(url, app)) {
                lease = Lease.builder(ConnectionSource.of(url, user)).resource(resource).holder("w" + a[5] + "-" + k)
                        .ttl(ttl).waitFor(Duration.ofSeconds(5)).acquire();
                long tok = lease.token();
                say("token", Long.toString(tok), now());
                while (System.currentTimeMillis() < end && !lease.isLost()) {
                    long old = lease.transaction(c, w -> {
                        try (PreparedStatement up = w.prepareStatement("UPDATE atk_rows SET v = v + 1 WHERE id = 1");
                                PreparedStatement last = w.prepareStatement("UPDATE atk_last SET tok = ? FROM "
                                        + "(SELECT tok FROM atk_last FOR UPDATE) o RETURNING o.tok")) {
                            up.executeUpdate();
                            last.setLong(1, tok);
                            try (ResultSet rs = last.executeQuery()) {
                                rs.next();
                                return rs.getLong(1);
                            }
                        }
                    });
                    say("write", Long.toString(tok), Long.toString(old));
                    Thread.sleep(50);
                }
                if (lease.isLost())
                    say("lost", Long.toString(tok), now(), lease.lostReason().getReason().toString());
            } catch (Exception e) {
                if (lease != null && lease.isLost())
                    say("lost", Long.toString(lease.token()), now(), lease.lostReason().getReason().toString());
                say("error", e.getClass().getSimpleName(), now());
                Thread.sleep(300);
            } finally {
                if (lease != null)
                    lease.close();
            }
            if (ThreadLocalRandom.current().nextBoolean())
                Thread.sleep(ThreadLocalRandom.current().nextInt(1000));
        }
        System.exit(0);
    }
}
