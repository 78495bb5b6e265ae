package io.github.pgfencing.jdbc;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;
import javax.sql.DataSource;

/** Where a lease gets the connection it acquires, renews and releases on. */
@FunctionalInterface
public interface ConnectionSource {
    Connection open() throws SQLException;

    static ConnectionSource of(DataSource dataSource) {
        return dataSource::getConnection;
    }

    static ConnectionSource of(String url, Properties properties) {
        Properties copy = new Properties();
        copy.putAll(properties);
        return () -> DriverManager.getConnection(url, copy);
    }
}
