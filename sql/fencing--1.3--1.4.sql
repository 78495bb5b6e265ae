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
--
-- A subscriber refuses what its publisher refused only if the publisher's
-- HWMs, tombstones and lease tokens arrive with the rows they fence. They
-- travel in the same publication as the user tables (one apply worker applies
-- them in the publisher's commit order), in text mode: a regclass travels as
-- its schema-qualified name and is read back by name, so relids map to the
-- subscriber's tables (in binary mode it would travel as the publisher's
-- OID). Policies (fencing.protected) and namespace owners are schema: each
-- cluster keeps its own, set up by the same DDL, as logical replication
-- requires of the user tables' DDL too. See docs/logical-replication.md.
----------------------------------------------------------------------------

-- The state tables that must travel with the user tables: the value column
-- that only rises, then the key columns.
CREATE FUNCTION fencing.replicated_state()
    RETURNS TABLE (relid pg_catalog.regclass, value_column pg_catalog.name,
                   key_columns pg_catalog.name[])
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    VALUES ('fencing.resource_hwm'::pg_catalog.regclass, 'hwm'::pg_catalog.name,
            ARRAY['namespace', 'resource']::pg_catalog.name[]),
           ('fencing.table_hwm', 'hwm', ARRAY['relid']),
           ('fencing.row_tombstone', 'hwm', ARRAY['relid', 'key']),
           ('fencing.lease', 'token', ARRAY['namespace', 'resource'])
$$;

-- Apply (session_replication_role = replica) may only raise: an INSERT of a
-- key this cluster already has keeps the row with the greater value (a
-- duplicate key would stall the subscription), an UPDATE that would lower the
-- value is skipped, and a DELETE is skipped (a reset or cleanup on the
-- publisher does not lower the subscriber). TG_ARGV: the value column, then
-- the key columns. Fires only as ENABLE REPLICA: apply, its initial COPY and
-- restores with session_replication_role = replica.
CREATE FUNCTION fencing.replica_keep_highest() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    val pg_catalog.text := TG_ARGV[0];
    keys pg_catalog.text[] := TG_ARGV[1:TG_NARGS OPERATOR(pg_catalog.-) 1];
    rest pg_catalog.text[];
BEGIN
    IF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
        RETURN NULL;
    END IF;
    IF TG_OP OPERATOR(pg_catalog.=) 'UPDATE' THEN
        IF (pg_catalog.to_jsonb(NEW) OPERATOR(pg_catalog.->>) val)::pg_catalog.int8
           OPERATOR(pg_catalog.<)
           (pg_catalog.to_jsonb(OLD) OPERATOR(pg_catalog.->>) val)::pg_catalog.int8 THEN
            RETURN NULL;
        END IF;
        RETURN NEW;
    END IF;
    -- INSERT. The statement below fires this trigger again: let it through.
    IF pg_catalog.pg_trigger_depth() OPERATOR(pg_catalog.>) 1 THEN
        RETURN NEW;
    END IF;
    SELECT pg_catalog.array_agg(a.attname::pg_catalog.text ORDER BY a.attnum) INTO rest
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid OPERATOR(pg_catalog.=) TG_RELID
       AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
       AND NOT a.attname::pg_catalog.text OPERATOR(pg_catalog.=) ANY (keys);
    -- One atomic step: no duplicate key from a local writer racing apply.
    EXECUTE pg_catalog.format(
        'INSERT INTO %I.%I AS t SELECT ($1).* ON CONFLICT (%s) DO UPDATE SET (%s) = ROW(%s)'
        ' WHERE t.%I OPERATOR(pg_catalog.<) EXCLUDED.%I',
        TG_TABLE_SCHEMA, TG_TABLE_NAME,
        (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(k), ', ') FROM pg_catalog.unnest(keys) k),
        (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(c), ', ') FROM pg_catalog.unnest(rest) c),
        (SELECT pg_catalog.string_agg('EXCLUDED.' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c), ', ')
           FROM pg_catalog.unnest(rest) c),
        val, val)
        USING NEW;
    RETURN NULL;
END $$;

CREATE TRIGGER replica_keep_highest BEFORE INSERT OR UPDATE OR DELETE ON fencing.resource_hwm
    FOR EACH ROW EXECUTE FUNCTION fencing.replica_keep_highest('hwm', 'namespace', 'resource');
CREATE TRIGGER replica_keep_highest BEFORE INSERT OR UPDATE OR DELETE ON fencing.table_hwm
    FOR EACH ROW EXECUTE FUNCTION fencing.replica_keep_highest('hwm', 'relid');
CREATE TRIGGER replica_keep_highest BEFORE INSERT OR UPDATE OR DELETE ON fencing.row_tombstone
    FOR EACH ROW EXECUTE FUNCTION fencing.replica_keep_highest('hwm', 'relid', 'key');
CREATE TRIGGER replica_keep_highest BEFORE INSERT OR UPDATE OR DELETE ON fencing.lease
    FOR EACH ROW EXECUTE FUNCTION fencing.replica_keep_highest('token', 'namespace', 'resource');
ALTER TABLE fencing.resource_hwm ENABLE REPLICA TRIGGER replica_keep_highest;
ALTER TABLE fencing.table_hwm ENABLE REPLICA TRIGGER replica_keep_highest;
ALTER TABLE fencing.row_tombstone ENABLE REPLICA TRIGGER replica_keep_highest;
ALTER TABLE fencing.lease ENABLE REPLICA TRIGGER replica_keep_highest;

-- Adds to a publication the state tables that must travel (those it does not
-- have yet); returns them all. SECURITY INVOKER: ALTER PUBLICATION ... ADD
-- TABLE needs the publication's and the tables' ownership (the extension's
-- owner, in practice a superuser).
CREATE FUNCTION @extschema@.fencing_publish(publication pg_catalog.name)
    RETURNS SETOF pg_catalog.regclass
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    pub pg_catalog.pg_publication;
    missing pg_catalog.text;
BEGIN
    IF publication IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
            MESSAGE = 'publication must not be NULL';
    END IF;
    SELECT * INTO pub FROM pg_catalog.pg_publication p
     WHERE p.pubname OPERATOR(pg_catalog.=) publication;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'undefined_object',
            MESSAGE = pg_catalog.format('publication "%s" does not exist', publication);
    END IF;
    IF pub.puballtables OR EXISTS (
           SELECT FROM pg_catalog.pg_publication_namespace pn
            WHERE pn.pnpubid OPERATOR(pg_catalog.=) pub.oid
              AND pn.pnnspid OPERATOR(pg_catalog.=) 'fencing'::pg_catalog.regnamespace) THEN
        RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = pg_catalog.format('publication "%s" publishes every table of schema fencing', publication),
            DETAIL = 'fencing.protected and fencing.resource_namespace are each cluster''s own (set up by its DDL); applying the publisher''s rows would conflict with the subscriber''s and stall the subscription.',
            HINT = 'Publish the user tables by name (FOR TABLE, or FOR TABLES IN SCHEMA of their schemas), then call fencing_publish().';
    END IF;
    IF NOT (pub.pubinsert AND pub.pubupdate) THEN
        RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = pg_catalog.format('publication "%s" does not publish inserts and updates', publication),
            DETAIL = 'HWMs, tombstones and lease tokens are inserted and raised by updates.',
            HINT = 'ALTER PUBLICATION ... SET (publish = ''insert, update, delete, truncate'').';
    END IF;
    -- A row filter on a state table turns a raise out of it into a DELETE
    -- (skipped by apply) and drops every later one; a column list leaves
    -- columns NULL or stale on the subscriber. The state travels whole.
    SELECT pg_catalog.string_agg(r.prrelid::pg_catalog.regclass::pg_catalog.text, ', ') INTO missing
      FROM pg_catalog.pg_publication_rel r
     WHERE r.prpubid OPERATOR(pg_catalog.=) pub.oid
       AND r.prrelid OPERATOR(pg_catalog.=) ANY (SELECT s.relid::pg_catalog.oid FROM fencing.replicated_state() s)
       AND (r.prqual IS NOT NULL OR r.prattrs IS NOT NULL);
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = pg_catalog.format('publication "%s" publishes %s with a row filter or a column list', publication, missing),
            DETAIL = 'A row filter drops the raises of HWM rows it does not match (a raise out of it is published as a DELETE, which apply skips); a column list leaves the other columns behind.',
            HINT = 'ALTER PUBLICATION ... SET TABLE the state tables without WHERE or a column list, then call fencing_publish() again.';
    END IF;
    SELECT pg_catalog.string_agg(s.relid::pg_catalog.text, ', ') INTO missing
      FROM fencing.replicated_state() s
     WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_publication_rel r
                        WHERE r.prpubid OPERATOR(pg_catalog.=) pub.oid
                          AND r.prrelid OPERATOR(pg_catalog.=) s.relid);
    IF missing IS NOT NULL THEN
        EXECUTE pg_catalog.format('ALTER PUBLICATION %I ADD TABLE %s', publication, missing);
    END IF;
    RETURN QUERY SELECT s.relid FROM fencing.replicated_state() s;
END $$;
COMMENT ON FUNCTION @extschema@.fencing_publish(pg_catalog.name) IS
    'adds the state tables that must travel with the fenced tables (HWMs, tombstones, leases) to a publication; needs ALTER PUBLICATION ... ADD TABLE rights';

-- On a subscriber: what keeps a subscription from carrying the publisher's
-- fencing state faithfully. No row: nothing found.
CREATE FUNCTION @extschema@.fencing_check_subscription()
    RETURNS TABLE (subscription pg_catalog.name, problem pg_catalog.text)
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH sub AS (
        SELECT s.oid, s.subname, s.subbinary
          FROM pg_catalog.pg_subscription s
         WHERE s.subdbid OPERATOR(pg_catalog.=)
               (SELECT d.oid FROM pg_catalog.pg_database d
                 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())),
    carries AS (   -- subscriptions that carry a protected table or a state table
        SELECT DISTINCT r.srsubid AS subid
          FROM pg_catalog.pg_subscription_rel r
         WHERE r.srrelid OPERATOR(pg_catalog.=) ANY (
               SELECT p.relid::pg_catalog.oid FROM fencing.protected p
               UNION ALL SELECT st.relid::pg_catalog.oid FROM fencing.replicated_state() st))
    SELECT sub.subname, 'binary = true: regclass columns (relid) travel as the publisher''s OIDs and name the wrong tables; use binary = false'
      FROM sub JOIN carries c ON c.subid OPERATOR(pg_catalog.=) sub.oid
     WHERE sub.subbinary
    UNION ALL
    SELECT sub.subname, pg_catalog.format('%s is not subscribed: its HWMs stay behind the publisher''s (fencing_publish() on the publisher, then ALTER SUBSCRIPTION ... REFRESH PUBLICATION)', st.relid)
      FROM sub JOIN carries c ON c.subid OPERATOR(pg_catalog.=) sub.oid
     CROSS JOIN fencing.replicated_state() st
     WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_subscription_rel r
                        WHERE r.srsubid OPERATOR(pg_catalog.=) sub.oid
                          AND r.srrelid OPERATOR(pg_catalog.=) st.relid)
    UNION ALL
    SELECT sub.subname, pg_catalog.format('%s is subscribed: it is each cluster''s own and its applied rows conflict with this cluster''s', r.srrelid::pg_catalog.regclass)
      FROM sub JOIN pg_catalog.pg_subscription_rel r ON r.srsubid OPERATOR(pg_catalog.=) sub.oid
     WHERE r.srrelid OPERATOR(pg_catalog.=) ANY (ARRAY['fencing.protected'::pg_catalog.regclass,
               'fencing.resource_namespace'::pg_catalog.regclass,
               'fencing.reset_log'::pg_catalog.regclass]::pg_catalog.oid[])
    UNION ALL
    SELECT sub.subname, pg_catalog.format('%s is still being synchronized (state %s): not ready for promotion', r.srrelid::pg_catalog.regclass, r.srsubstate)
      FROM sub JOIN carries c ON c.subid OPERATOR(pg_catalog.=) sub.oid
      JOIN pg_catalog.pg_subscription_rel r ON r.srsubid OPERATOR(pg_catalog.=) sub.oid
     WHERE r.srsubstate OPERATOR(pg_catalog.<>) 'r'
    UNION ALL
    -- A table added without its initial copy (copy_data = false) is READY with
    -- no sync LSN. For a state table that is a loss, not a shortcut: the
    -- publisher's rows from before never arrive, and each later raise of one
    -- of them is an applied UPDATE of a row this cluster does not have, which
    -- apply skips.
    SELECT sub.subname, pg_catalog.format('%s was subscribed with copy_data = false: the publisher''s HWMs from before never arrive and their later raises are skipped (an UPDATE of a missing row); subscribe it again with copy_data = true', r.srrelid::pg_catalog.regclass)
      FROM sub JOIN pg_catalog.pg_subscription_rel r ON r.srsubid OPERATOR(pg_catalog.=) sub.oid
     WHERE r.srrelid OPERATOR(pg_catalog.=) ANY (SELECT st.relid::pg_catalog.oid FROM fencing.replicated_state() st)
       AND r.srsubstate OPERATOR(pg_catalog.=) 'r' AND r.srsublsn IS NULL
    UNION ALL
    SELECT sub.subname, pg_catalog.format('protected table %s is subscribed by another subscription than this one''s state tables: the two apply out of the publisher''s commit order', p.relid)
      FROM sub
      JOIN pg_catalog.pg_subscription_rel st ON st.srsubid OPERATOR(pg_catalog.=) sub.oid
           AND st.srrelid OPERATOR(pg_catalog.=) 'fencing.table_hwm'::pg_catalog.regclass
      JOIN pg_catalog.pg_subscription_rel r ON r.srsubid OPERATOR(pg_catalog.<>) sub.oid
      JOIN fencing.protected p ON p.relid::pg_catalog.oid OPERATOR(pg_catalog.=) r.srrelid
    UNION ALL
    SELECT sub.subname, pg_catalog.format('%s apply errors (see the server log): the subscription may be stalled', ss.apply_error_count)
      FROM sub JOIN carries c ON c.subid OPERATOR(pg_catalog.=) sub.oid
      JOIN pg_catalog.pg_stat_subscription_stats ss ON ss.subid OPERATOR(pg_catalog.=) sub.oid
     WHERE ss.apply_error_count OPERATOR(pg_catalog.>) 0
$$;
COMMENT ON FUNCTION @extschema@.fencing_check_subscription() IS
    'on a subscriber: problems that keep a subscription from carrying the publisher''s fencing state (binary mode, state tables missing, split or not copied, sync unfinished, apply errors)';

----------------------------------------------------------------------------
-- Smaller DDL cases: the token column dropped, long row keys, temporary
-- tables, CREATE TABLE ... LIKE.
----------------------------------------------------------------------------

-- CREATE TABLE ... (LIKE fenced ...) copies columns, never a fencing policy:
-- fencing.ddl_check_start() says so in a NOTICE when a LIKE source is fenced
-- (it reads the parse tree, which only ddl_command_start shows). The same
-- function as for ALTER TABLE and ALTER TYPE; EXECUTE stays revoked.
CREATE EVENT TRIGGER fencing_ddl_check_create ON ddl_command_start
    WHEN TAG IN ('CREATE TABLE')
    EXECUTE FUNCTION fencing.ddl_check_start();

----------------------------------------------------------------------------
-- TRUNCATE on a subscriber, in every scope.
----------------------------------------------------------------------------
-- Every guarded relation has a BEFORE TRUNCATE trigger (fencing.truncate_guard):
-- on a subscriber it refuses a local TRUNCATE of a table a subscription
-- replicates, as the guard refuses any other local write; in row scope it
-- also tombstones every row (zz_fencing_truncate_<leaf>); in resource and
-- table scope it writes nothing (zz_fencing_truncate_check_<leaf>). Tables
-- protected in those scopes before 1.4 have none: re-install every guard the
-- way this version does.
SELECT pg_catalog.count(*) FROM @extschema@.fencing_verify_guards(true);
