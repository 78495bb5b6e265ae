-- fencing 1.3 -> 1.4
\echo Use "ALTER EXTENSION fencing UPDATE TO '1.4'" to load this file. \quit

----------------------------------------------------------------------------
-- Fail closed: writes without a token, and session-level tokens.
----------------------------------------------------------------------------
-- A table protected from now on requires a token (TF002 without one) unless
-- it is protected with require_token => false. The rows already in
-- fencing.protected keep their setting, and so do their guards.
ALTER TABLE fencing.protected ALTER COLUMN require_token SET DEFAULT true;
CREATE OR REPLACE FUNCTION @extschema@.fencing_protect(
        target pg_catalog.regclass,
        token_column pg_catalog.name DEFAULT NULL,
        scope pg_catalog.text DEFAULT 'row',
        resource_column pg_catalog.name DEFAULT NULL,
        resource_namespace pg_catalog.text DEFAULT NULL,
        on_stale pg_catalog.text DEFAULT 'error',
        strict pg_catalog.bool DEFAULT false,
        require_token pg_catalog.bool DEFAULT true)
    RETURNS void AS 'MODULE_PATHNAME', 'fencing_protect' LANGUAGE C VOLATILE;

-- Writes without a token to a table that requires one, on purpose and for
-- the current transaction only (table owner or superuser). Logged; the rows
-- are counted as unfenced writes in fencing_stats.
CREATE FUNCTION @extschema@.fencing_allow_unfenced(target pg_catalog.regclass,
        reason pg_catalog.text)
    RETURNS void AS 'MODULE_PATHNAME', 'fencing_allow_unfenced' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_allow_unfenced(pg_catalog.regclass, pg_catalog.text) IS
    'admits writes without a token to a table until the transaction ends, logged (owner only)';

----------------------------------------------------------------------------
-- Online table rewrites (pg_repack) of the extension's tables.
----------------------------------------------------------------------------

----------------------------------------------------------------------------
-- Dropping and detaching row-scope partitions.
----------------------------------------------------------------------------

----------------------------------------------------------------------------
-- Logical replication of the extension's state.
----------------------------------------------------------------------------

----------------------------------------------------------------------------
-- Smaller DDL cases: the token column dropped, long row keys, temporary
-- tables, CREATE TABLE ... LIKE.
----------------------------------------------------------------------------
