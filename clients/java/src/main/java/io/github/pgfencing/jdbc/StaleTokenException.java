package io.github.pgfencing.jdbc;

import java.sql.SQLException;

/**
 * TF001: the write was refused because a newer token has been seen. Re-acquire, re-read, write.
 * The fields come from the server's error fields (schema, table) and its DETAIL line
 * ("&lt;key&gt;: offered token N is below the high-water mark M."); a field the server did
 * not send is null.
 */
public final class StaleTokenException extends SQLException {
    private static final long serialVersionUID = 1L;
    private final String schema;
    private final String table;
    private final String key;
    private final Long offeredToken;
    private final Long highWaterMark;
    private final boolean strict;

    public StaleTokenException(String message, String schema, String table, String key,
            Long offeredToken, Long highWaterMark, boolean strict, Throwable cause) {
        super(message, "TF001", cause);
        this.schema = schema;
        this.table = table;
        this.key = key;
        this.offeredToken = offeredToken;
        this.highWaterMark = highWaterMark;
        this.strict = strict;
    }

    public String getSchema() { return schema; }

    public String getTable() { return table; }

    /** "Key (id)=(1)", "Table-wide", "Resource 'r' (namespace 'n')" or "Row (...)". */
    public String getKey() { return key; }

    public Long getOfferedToken() { return offeredToken; }

    public Long getHighWaterMark() { return highWaterMark; }

    /** The table is strict: a token equal to the mark was refused too. */
    public boolean isStrict() { return strict; }
}
