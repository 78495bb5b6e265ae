package io.github.pgfencing.jdbc.test;

import io.github.pgfencing.jdbc.Fencing;
import java.sql.Connection;
import java.util.Properties;

/**
 * withToken sets the token with a literal SET LOCAL, what Citus forwards to its workers, on a
 * plain Statement that is never server-prepared, even on a connection that prepares every
 * statement at its first execution; the token ends with the transaction. What the server
 * received is read from another connection while the work runs. Uses TestMain's harness.
 */
final class SetLocalTest {
    private SetLocalTest() {}

    static void run(Connection admin) throws Exception {
        TestMain.exec(admin, "DROP TABLE IF EXISTS set_local_items");
        TestMain.exec(admin, "CREATE TABLE set_local_items (id int PRIMARY KEY, v int NOT NULL, fence fencing_token)");
        TestMain.exec(admin, "SELECT fencing_protect('set_local_items', 'fence')");
        Properties eager = new Properties();
        eager.setProperty("prepareThreshold", "1");
        try (Connection c = TestMain.connect(eager)) {
            String pid = TestMain.one(c, "SELECT pg_catalog.pg_backend_pid()::text");
            String[] seen = new String[3];
            for (int i = 0; i < seen.length; i++) {
                int row = i;
                seen[i] = Fencing.withToken(c, 9000, w -> {
                    String query = TestMain.one(admin, "SELECT query || ' (' || state || ')' FROM "
                            + "pg_catalog.pg_stat_activity WHERE pid = ?::int", pid);
                    TestMain.exec(w, "INSERT INTO set_local_items VALUES (?, 1)", row);
                    return query;
                });
            }
            String want = "SET LOCAL fencing.token = '9000' (idle in transaction)";
            boolean all = java.util.Arrays.stream(seen).allMatch(want::equals);
            TestMain.ok(all, "set local: withToken sends " + want + " as its own statement, each time: "
                    + String.join(", ", seen));
            String prepared = TestMain.one(c, "SELECT count(*)::text FROM pg_catalog.pg_prepared_statements "
                    + "WHERE statement ~ 'fencing[.]token'");
            TestMain.ok("0".equals(prepared), "set local: never server-prepared at prepareThreshold=1 ("
                    + prepared + " prepared statements set the token)");
            String after = TestMain.one(c, "SELECT current_setting('fencing.token')");
            String fences = TestMain.one(admin, "SELECT string_agg(fence::text, ',' ORDER BY id) FROM set_local_items");
            TestMain.ok("".equals(after) && "9000,9000,9000".equals(fences), "set local: the rows carry 9000 "
                    + "and the token ended with each transaction (fences " + fences + ", after '" + after + "')");
        }
    }
}
