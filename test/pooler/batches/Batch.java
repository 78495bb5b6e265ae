// Runs the cases of test/pooler/batches/README.md with pgjdbc.
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

public final class Batch {
    private Batch() {
    }

    /** "ok", or the SQLSTATE of the server's error (a BatchUpdateException's next exception). */
    static String outcome(SQLException e) {
        SQLException cause = e;
        if (e instanceof BatchUpdateException && e.getNextException() != null) {
            cause = e.getNextException();
        }
        String state = cause.getSQLState();
        return state != null ? state : "error:" + cause.getMessage().replace(' ', '_');
    }

    static String runCase(String url, boolean load, String spec) throws SQLException {
        List<String> lines = Arrays.asList(spec.split("\n"));
        String shape = lines.get(0);
        List<String> stmts = lines.subList(1, lines.size());
        try (Connection conn = DriverManager.getConnection(url); Statement st = conn.createStatement()) {
            conn.setAutoCommit(true);
            if (load) {
                st.execute("LOAD 'fencing'");
            }
            switch (shape) {
                case "batch":
                    try {
                        for (String s : stmts) {
                            st.addBatch(s);
                        }
                        st.executeBatch();
                        return "ok";
                    } catch (SQLException e) {
                        return outcome(e);
                    }
                case "multi":
                    try {
                        st.execute(String.join("; ", stmts));
                        return "ok";
                    } catch (SQLException e) {
                        return outcome(e);
                    }
                case "each":
                    List<String> got = new ArrayList<>();
                    for (String s : stmts) {
                        try {
                            st.execute(s);
                            got.add("ok");
                        } catch (SQLException e) {
                            got.add(outcome(e));
                        }
                    }
                    return String.join(" ", got);
                default:
                    throw new IllegalArgumentException("unknown shape " + shape);
            }
        }
    }

    public static void main(String[] args) throws SQLException {
        if (args.length < 2) {
            System.err.println("usage: Batch JDBC_URL LOAD CASE...");
            System.exit(2);
        }
        for (int i = 2; i < args.length; i++) {
            System.out.println(runCase(args[0], args[1].equals("1"), args[i]));
        }
    }
}
