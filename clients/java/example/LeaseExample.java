// A worker that holds a lease on "orders-export" while it writes, with the fencing JDBC client.
//   java -cp fencing-jdbc-1.5.jar:/usr/share/java/postgresql.jar:. LeaseExample jdbc:postgresql://127.0.0.1:5432/app
import fencing.jdbc.ConnectionSource;
import fencing.jdbc.Fencing;
import fencing.jdbc.Lease;
import fencing.jdbc.StaleTokenException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;

public final class LeaseExample {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", System.getProperty("pguser", "postgres"));
        ConnectionSource source = ConnectionSource.of(args[0], p);
        try (Connection conn = source.open()) {
            try (Statement s = conn.createStatement()) {
                s.execute("DROP TABLE IF EXISTS export_state");
                s.execute("CREATE TABLE export_state (id int PRIMARY KEY, last_id bigint, fence fencing_token)");
                s.execute("SELECT fencing_protect('export_state', 'fence')");
            }
            long first;
            // The lease renews itself in the background; close() releases it.
            try (Lease lease = Lease.builder(source).resource("orders-export").ttl(Duration.ofSeconds(10))
                    .waitFor(Duration.ofSeconds(5))
                    .listener((l, why) -> System.err.println("stop working: " + why.getMessage()))
                    .acquire()) {
                first = lease.token();
                System.out.println("acquired token " + first);
                // Plain SQL in one transaction carrying the token (SET LOCAL fencing.token).
                lease.transaction(conn, c -> {
                    try (PreparedStatement ps = c.prepareStatement(
                            "INSERT INTO export_state VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET last_id = EXCLUDED.last_id")) {
                        ps.setLong(1, 42);
                        return ps.executeUpdate();
                    }
                });
            }
            // A newer holder writes; the first token is now stale and its write is refused.
            try (Lease next = Lease.builder(source).resource("orders-export").acquire()) {
                next.fencedUpdate(conn, "export_state", "{\"id\": 1}", "{\"last_id\": 43}");
            }
            try {
                Fencing.withToken(conn, first, c -> {
                    try (Statement s = c.createStatement()) {
                        return s.executeUpdate("UPDATE export_state SET last_id = 0 WHERE id = 1");
                    }
                });
                System.out.println("unexpected: the stale write went through");
                System.exit(1);
            } catch (StaleTokenException e) {
                System.out.println("stale holder refused: " + e.getKey() + ", offered " + e.getOfferedToken()
                        + ", high-water mark " + e.getHighWaterMark());
            }
        }
    }
}
