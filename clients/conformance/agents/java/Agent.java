// The conformance agent for fencing-jdbc: the line protocol of clients/conformance/PROTOCOL.md
// on stdin/stdout. Requests are flat JSON objects (strings, numbers, booleans, null).
import io.github.pgfencing.jdbc.ConnectionSource;
import io.github.pgfencing.jdbc.Fencing;
import io.github.pgfencing.jdbc.Lease;
import io.github.pgfencing.jdbc.LeaseClosedException;
import io.github.pgfencing.jdbc.LeaseLostException;
import io.github.pgfencing.jdbc.LeaseTakenOverException;
import io.github.pgfencing.jdbc.LeaseUnavailableException;
import io.github.pgfencing.jdbc.StaleTokenException;
import io.github.pgfencing.jdbc.TokenRequiredException;
import io.github.pgfencing.jdbc.TransactionAbortedException;
import io.github.pgfencing.jdbc.TransactionInProgressException;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

public final class Agent {
    private static final PrintStream OUT = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
            StandardCharsets.UTF_8);
    private final Map<String, Lease> leases = new HashMap<>();
    private final String url;
    private final Properties props = new Properties();
    private Connection app;

    private Agent() throws SQLException {
        String host = System.getenv().getOrDefault("CONFORMANCE_JDBC_HOST", "127.0.0.1");
        url = "jdbc:postgresql://" + host + ":" + System.getenv().getOrDefault("PGPORT", "5432") + "/"
                + System.getenv().getOrDefault("PGDATABASE", "postgres");
        props.setProperty("user", System.getenv().getOrDefault("PGUSER", "postgres"));
        reconnect(null);
    }

    static synchronized void emit(Map<String, Object> m) {
        OUT.print(json(m) + "\n");
        OUT.flush();
    }

    // ------------------------------------------------------------------ commands

    Map<String, Object> reconnect(Map<String, Object> m) throws SQLException {
        if (app != null) {
            try {
                app.close();
            } catch (SQLException ignored) {
                // a dead connection
            }
        }
        app = ConnectionSource.of(url, props).open();
        return new LinkedHashMap<>();
    }

    Map<String, Object> hello(Map<String, Object> m) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("lang", "java");
        r.put("library", "fencing-jdbc " + Lease.class.getPackage().getImplementationVersion());
        r.put("driver", "pgjdbc " + org.postgresql.Driver.class.getPackage().getImplementationVersion());
        r.put("pid", ProcessHandle.current().pid());
        return r;
    }

    Map<String, Object> acquire(Map<String, Object> m) throws SQLException {
        String name = (String) m.get("lease");
        Lease.Builder b = Lease.builder(ConnectionSource.of(url, props)).resource((String) m.get("resource"))
                .namespace((String) m.get("namespace")).holder((String) m.get("holder"))
                .ttl(Duration.ofMillis(num(m, "ttl_ms")))
                .listener((l, why) -> {
                    Map<String, Object> e = new LinkedHashMap<>();
                    e.put("event", "lost");
                    e.put("lease", name);
                    e.put("reason", why.getReason().toString());
                    e.put("at", System.currentTimeMillis() / 1000.0);
                    e.put("token", Long.toString(why.getToken()));
                    emit(e);
                });
        if (m.get("wait_ms") != null)
            b.waitFor(Duration.ofMillis(num(m, "wait_ms")));
        if (m.get("renew_every_ms") != null)
            b.renewInterval(Duration.ofMillis(num(m, "renew_every_ms")));
        if (m.get("margin_ms") != null)
            b.margin(Duration.ofMillis(num(m, "margin_ms")));
        double sent = System.currentTimeMillis() / 1000.0;
        Lease lease = b.acquire();
        leases.put(name, lease);
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("token", Long.toString(lease.token()));
        r.put("sent_at", sent);
        r.put("returned_at", System.currentTimeMillis() / 1000.0);
        return r;
    }

    private Lease lease(Map<String, Object> m) {
        Lease l = leases.get((String) m.get("lease"));
        if (l == null)
            throw new IllegalStateException("no lease " + m.get("lease"));
        return l;
    }

    Map<String, Object> state(Map<String, Object> m) {
        Lease l = lease(m);
        Lease.State s = l.state();
        LeaseLostException why = l.lostReason();
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("state", s.name().toLowerCase(java.util.Locale.ROOT));
        r.put("lost", why != null);
        r.put("closed", l.isClosed());
        r.put("reason", why == null ? null : why.getReason().toString());
        r.put("token", Long.toString(l.token()));
        return r;
    }

    Map<String, Object> write(Map<String, Object> m) throws SQLException {
        Lease l = lease(m);
        long hold = m.get("hold_ms") == null ? 0 : num(m, "hold_ms");
        long holdServer = m.get("hold_server_ms") == null ? 0 : num(m, "hold_server_ms");
        int rows = l.transaction(app, c -> {
            try (PreparedStatement ps = c.prepareStatement("UPDATE " + quote((String) m.get("table"))
                    + " SET v = ?, n = n + 1 WHERE id = ?")) {
                ps.setString(1, (String) m.get("value"));
                ps.setInt(2, (int) num(m, "row"));
                int n = ps.executeUpdate();
                if (hold > 0) {
                    try {
                        Thread.sleep(hold);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                if (holdServer > 0) {
                    try (PreparedStatement sleep = c.prepareStatement("SELECT pg_sleep(? / 1000.0)")) {
                        sleep.setLong(1, holdServer);
                        sleep.execute();
                    }
                }
                return n;
            }
        });
        return Map.of("rows", rows);
    }

    Map<String, Object> fencedUpdate(Map<String, Object> m) throws SQLException {
        String key = "{\"id\": " + num(m, "row") + "}";
        String changes = "{\"v\": " + quoteJson((String) m.get("value")) + "}";
        long n = m.containsKey("lease") ? lease(m).fencedUpdate(app, (String) m.get("table"), key, changes)
                : Fencing.fencedUpdate(app, (String) m.get("table"), Long.parseLong((String) m.get("token")), key, changes);
        return Map.of("rows", n);
    }

    Map<String, Object> release(Map<String, Object> m) {
        return Map.of("released", lease(m).release());
    }

    Map<String, Object> close(Map<String, Object> m) {
        Lease l = lease(m);
        boolean released = l.release();
        l.close();
        return Map.of("released", released);
    }

    // ------------------------------------------------------------------ errors

    static Map<String, Object> errorOf(Throwable e) {
        String kind;
        Map<String, Object> fields = new LinkedHashMap<>();
        if (e instanceof LeaseTakenOverException)
            kind = "LeaseTakenOver";
        else if (e instanceof LeaseLostException)
            kind = "LeaseLost";
        else if (e instanceof LeaseClosedException)
            kind = "LeaseClosed";
        else if (e instanceof LeaseUnavailableException)
            kind = "LeaseNotAcquired";
        else if (e instanceof StaleTokenException) {
            kind = "StaleToken";
            StaleTokenException s = (StaleTokenException) e;
            fields.put("schema", s.getSchema());
            fields.put("table", s.getTable());
            fields.put("key", s.getKey());
            fields.put("offered", s.getOfferedToken() == null ? null : s.getOfferedToken().toString());
            fields.put("hwm", s.getHighWaterMark() == null ? null : s.getHighWaterMark().toString());
            fields.put("strict", s.isStrict());
        } else if (e instanceof TokenRequiredException)
            kind = "TokenRequired";
        else if (e instanceof TransactionAbortedException)
            kind = "TransactionAborted";
        else if (e instanceof TransactionInProgressException)
            kind = "TransactionInProgress";
        else if (e instanceof SQLException && "55000".equals(((SQLException) e).getSQLState())
                && String.valueOf(e.getMessage()).contains("ALTER EXTENSION"))
            kind = "ExtensionTooOld";
        else if (e instanceof SQLException)
            kind = "Database";
        else if (e instanceof IllegalStateException || e instanceof IllegalArgumentException)
            kind = "Usage";
        else
            kind = "Other";
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("kind", kind);
        r.put("sqlstate", e instanceof SQLException ? ((SQLException) e).getSQLState() : null);
        r.put("message", String.valueOf(e.getMessage()));
        r.put("fields", fields);
        return r;
    }

    // ------------------------------------------------------------------ JSON

    static long num(Map<String, Object> m, String k) {
        return ((Number) m.get(k)).longValue();
    }

    static String quote(String ident) {
        return "\"" + ident.replace("\"", "\"\"") + "\"";
    }

    static String quoteJson(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\')
                b.append('\\').append(c);
            else if (c < 0x20)
                b.append(String.format("\\u%04x", (int) c));
            else
                b.append(c);
        }
        return b.append('"').toString();
    }

    @SuppressWarnings("unchecked")
    static String json(Object v) {
        if (v == null)
            return "null";
        if (v instanceof String)
            return quoteJson((String) v);
        if (v instanceof Number || v instanceof Boolean)
            return v.toString();
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, Object> e : ((Map<String, Object>) v).entrySet()) {
            if (b.length() > 1)
                b.append(", ");
            b.append(quoteJson(e.getKey())).append(": ").append(json(e.getValue()));
        }
        return b.append('}').toString();
    }

    /** A flat JSON object: string, number, true, false, null values. */
    static Map<String, Object> parse(String s) {
        Map<String, Object> m = new LinkedHashMap<>();
        int[] i = {0};
        skip(s, i);
        expect(s, i, '{');
        skip(s, i);
        if (s.charAt(i[0]) == '}')
            return m;
        while (true) {
            skip(s, i);
            String k = string(s, i);
            skip(s, i);
            expect(s, i, ':');
            skip(s, i);
            m.put(k, value(s, i));
            skip(s, i);
            char c = s.charAt(i[0]++);
            if (c == '}')
                return m;
            if (c != ',')
                throw new IllegalArgumentException("bad JSON at " + i[0] + ": " + s);
        }
    }

    private static Object value(String s, int[] i) {
        char c = s.charAt(i[0]);
        if (c == '"')
            return string(s, i);
        for (String w : new String[] {"true", "false", "null"}) {
            if (s.startsWith(w, i[0])) {
                i[0] += w.length();
                return w.equals("null") ? null : Boolean.valueOf(w);
            }
        }
        int start = i[0];
        while (i[0] < s.length() && "+-0123456789.eE".indexOf(s.charAt(i[0])) >= 0)
            i[0]++;
        String n = s.substring(start, i[0]);
        if (n.isEmpty())
            throw new IllegalArgumentException("bad JSON value at " + start + ": " + s);
        return n.matches("-?\\d+") ? (Object) Long.valueOf(n) : (Object) Double.valueOf(n);
    }

    private static String string(String s, int[] i) {
        expect(s, i, '"');
        StringBuilder b = new StringBuilder();
        while (true) {
            char c = s.charAt(i[0]++);
            if (c == '"')
                return b.toString();
            if (c == '\\') {
                char e = s.charAt(i[0]++);
                switch (e) {
                case 'n': b.append('\n'); break;
                case 't': b.append('\t'); break;
                case 'r': b.append('\r'); break;
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'u': b.append((char) Integer.parseInt(s.substring(i[0], i[0] + 4), 16)); i[0] += 4; break;
                default: b.append(e);
                }
            } else
                b.append(c);
        }
    }

    private static void skip(String s, int[] i) {
        while (i[0] < s.length() && Character.isWhitespace(s.charAt(i[0])))
            i[0]++;
    }

    private static void expect(String s, int[] i, char c) {
        if (s.charAt(i[0]++) != c)
            throw new IllegalArgumentException("expected " + c + " at " + (i[0] - 1) + ": " + s);
    }

    // ------------------------------------------------------------------ main

    public static void main(String[] args) throws Exception {
        Agent a = new Agent();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank())
                continue;
            Map<String, Object> m = parse(line);
            Object id = m.get("id");
            String cmd = (String) m.get("cmd");
            if ("quit".equals(cmd)) {
                emit(ok(id, new LinkedHashMap<>()));
                break;
            }
            try {
                Map<String, Object> r;
                switch (cmd) {
                case "hello": r = a.hello(m); break;
                case "acquire": r = a.acquire(m); break;
                case "state": r = a.state(m); break;
                case "write": r = a.write(m); break;
                case "fenced_update": r = a.fencedUpdate(m); break;
                case "release": r = a.release(m); break;
                case "close": r = a.close(m); break;
                case "reconnect": r = a.reconnect(m); break;
                default: throw new IllegalArgumentException("unknown command " + cmd);
                }
                emit(ok(id, r));
            } catch (Throwable e) {
                Map<String, Object> r = new LinkedHashMap<>();
                r.put("id", id);
                r.put("ok", false);
                r.put("error", errorOf(e));
                emit(r);
            }
        }
        for (Lease l : a.leases.values())
            l.close();
        System.exit(0);
    }

    private static Map<String, Object> ok(Object id, Map<String, Object> r) {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("id", id);
        o.put("ok", true);
        o.putAll(r);
        return o;
    }
}
