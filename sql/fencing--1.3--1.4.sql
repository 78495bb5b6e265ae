-- fencing 1.3 -> 1.4
\echo Use "ALTER EXTENSION fencing UPDATE TO '1.4'" to load this file. \quit

----------------------------------------------------------------------------
-- Fail closed: writes without a token, and session-level tokens.
----------------------------------------------------------------------------

----------------------------------------------------------------------------
-- Online table rewrites (pg_repack) of the extension's tables.
----------------------------------------------------------------------------

----------------------------------------------------------------------------
-- Dropping and detaching row-scope partitions.
----------------------------------------------------------------------------
-- In row scope a row's HWM is its own token. Before DROP TABLE, DROP SCHEMA
-- or DROP OWNED removes a partition of a row-scope fenced table whose home
-- stays, every row of it leaves a tombstone under the home, in the same
-- transaction (src/pg/partition_removal.cpp; ALTER TABLE ... DETACH
-- PARTITION does the same through fencing_ddl_check_start, and refuses
-- CONCURRENTLY in row scope). ENABLE ALWAYS, as the guard's event triggers:
-- a DROP under session_replication_role = replica removes rows too.
CREATE EVENT TRIGGER fencing_ddl_check_drop ON ddl_command_start
    WHEN TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED')
    EXECUTE FUNCTION fencing.ddl_check_start();
ALTER EVENT TRIGGER fencing_ddl_check_drop ENABLE ALWAYS;

-- Other commands can drop a partition by cascade (DROP EXTENSION of an
-- extension that owns it, DROP ACCESS METHOD ... CASCADE), and their parse
-- trees do not say which: fail closed. A dropped row-scope truncate guard
-- (zz_fencing_truncate_<leaf>) on a leaf that is not itself a fenced home is
-- a partition's, and its rows leave no tombstones; unless a row-scope home is
-- dropped by the same command (its state goes with it), refuse. Named to fire
-- before fencing_sql_drop_cascade, which deletes dropped homes' policies.
CREATE FUNCTION fencing.on_partition_drop() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    leaf record;
BEGIN
    IF TG_TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED') THEN
        RETURN;  -- tombstoned before they ran (fencing_ddl_check_drop)
    END IF;
    SELECT d.address_names[1] AS nspname, d.address_names[2] AS relname INTO leaf
      FROM pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.object_type OPERATOR(pg_catalog.=) 'trigger'
       AND d.address_names[3] OPERATOR(pg_catalog.~) '^zz_fencing_truncate_[0-9]+$'
       AND NOT EXISTS (SELECT 1 FROM fencing.protected p
                        WHERE p.relid OPERATOR(pg_catalog.=)
                              pg_catalog.substr(d.address_names[3], 21)::pg_catalog.oid)
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_event_trigger_dropped_objects() h
                         JOIN fencing.protected p ON p.relid OPERATOR(pg_catalog.=) h.objid
                        WHERE h.object_type OPERATOR(pg_catalog.=) 'table'
                          AND p.scope OPERATOR(pg_catalog.=) 'row')
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '% cannot drop partition %.% of a row-scope fenced table',
                TG_TAG, pg_catalog.quote_ident(leaf.nspname), pg_catalog.quote_ident(leaf.relname)
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'Its rows would leave the fenced table without tombstones, and a '
                           'stale writer could re-insert their keys.',
                  HINT = 'DROP TABLE or DETACH PARTITION the partition first: they leave a '
                         'tombstone for every row.';
    END IF;
END $$;
REVOKE ALL ON FUNCTION fencing.on_partition_drop() FROM PUBLIC;
CREATE EVENT TRIGGER fencing_partition_drop ON sql_drop
    EXECUTE FUNCTION fencing.on_partition_drop();
ALTER EVENT TRIGGER fencing_partition_drop ENABLE ALWAYS;

----------------------------------------------------------------------------
-- Logical replication of the extension's state.
----------------------------------------------------------------------------

----------------------------------------------------------------------------
-- Smaller DDL cases: the token column dropped, long row keys, temporary
-- tables, CREATE TABLE ... LIKE.
----------------------------------------------------------------------------
