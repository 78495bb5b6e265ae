package io.github.pgfencing.jdbc;

import java.sql.Connection;
import java.sql.SQLException;

/** Work run on a connection inside a transaction that carries a fencing token. */
@FunctionalInterface
public interface SqlWork<T> {
    T run(Connection connection) throws SQLException;
}
