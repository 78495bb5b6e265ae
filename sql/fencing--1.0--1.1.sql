-- fencing 1.0 -> 1.1: hardening.
\echo Use "ALTER EXTENSION fencing UPDATE TO '1.1'" to load this file. \quit

-- Every object reference is schema-qualified (pg_catalog, @extschema@ or
-- fencing), so this script does not depend on the caller's search_path.

----------------------------------------------------------------------------
-- Resource namespaces are owned by role OID (regrole): a rename does not free
-- a namespace, and pg_dump writes the owner by name. A claim whose role no
-- longer exists keeps a NULL owner: nobody can join it until a superuser gives
-- it an owner. 'default' is never stored: it belongs to the extension's owner.
----------------------------------------------------------------------------
ALTER TABLE fencing.resource_namespace ALTER COLUMN owner DROP NOT NULL;
ALTER TABLE fencing.resource_namespace ALTER COLUMN owner TYPE pg_catalog.regrole
    USING pg_catalog.to_regrole(pg_catalog.quote_ident(owner));
DELETE FROM fencing.resource_namespace WHERE name OPERATOR(pg_catalog.=) 'default';
COMMENT ON TABLE fencing.resource_namespace IS
    'owner of each resource namespace; ''default'' always belongs to the extension owner';

----------------------------------------------------------------------------
-- Tokens from every driver: psycopg binds a small Python int as smallint and
-- a large one (or a Decimal) as numeric. Both convert implicitly, integral
-- values only (nothing is rounded), so `SET fence = %s` and
-- `fenced_update(t, %s, ...)` need no casts.
----------------------------------------------------------------------------
CREATE FUNCTION @extschema@.fencing_token(pg_catalog.int2)
    RETURNS @extschema@.fencing_token AS 'MODULE_PATHNAME', 'fencing_token_from_int2'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token(pg_catalog.numeric)
    RETURNS @extschema@.fencing_token AS 'MODULE_PATHNAME', 'fencing_token_from_numeric'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (pg_catalog.int2 AS @extschema@.fencing_token)
    WITH FUNCTION @extschema@.fencing_token(pg_catalog.int2) AS IMPLICIT;
CREATE CAST (pg_catalog.numeric AS @extschema@.fencing_token)
    WITH FUNCTION @extschema@.fencing_token(pg_catalog.numeric) AS IMPLICIT;

-- fencing_high_water() reads tombstones with the latest snapshot: its result
-- can change within a statement, so it is VOLATILE, not STABLE.
ALTER FUNCTION @extschema@.fencing_high_water(pg_catalog.regclass, pg_catalog.jsonb) VOLATILE;

-- The HWM tables are heap tables whatever default_table_access_method was
-- when the extension was created (the direct raise path is heap-only).
ALTER TABLE fencing.resource_hwm SET ACCESS METHOD heap;
ALTER TABLE fencing.table_hwm SET ACCESS METHOD heap;
ALTER TABLE fencing.row_tombstone SET ACCESS METHOD heap;

----------------------------------------------------------------------------
-- Tombstone keys are canonical (src/pg/tombstone_key.cpp). 1.0 keyed char(n)
-- columns by their padded bytes; 1.1 strips trailing spaces, as bpchar
-- equality does. Re-key those tombstones, keeping the highest HWM where two
-- old keys become one, so no deleted char(n) key loses its tombstone. (Every
-- other allowlisted type keeps 1.0's form, except float -0/NaN and interval
-- keys, which are not re-keyed: see the README.)
----------------------------------------------------------------------------
DO $rekey$
DECLARE
    t record;
    c record;
    typ pg_catalog.oid;
    kind pg_catalog.char;
    positions pg_catalog.int8[];
BEGIN
    FOR t IN SELECT p.relid FROM fencing.protected p
              WHERE p.scope OPERATOR(pg_catalog.=) 'row'
    LOOP
        positions := '{}';
        FOR c IN
            SELECT k.ord, a.atttypid
              FROM pg_catalog.pg_index i
             CROSS JOIN LATERAL pg_catalog.unnest(i.indkey::pg_catalog.int2[])
                   WITH ORDINALITY AS k(attnum, ord)
              JOIN pg_catalog.pg_attribute a
                ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid
               AND a.attnum OPERATOR(pg_catalog.=) k.attnum
             WHERE i.indrelid OPERATOR(pg_catalog.=) t.relid AND i.indisprimary
        LOOP
            typ := c.atttypid;
            LOOP  -- a domain's base type, through any number of domains
                SELECT ty.typtype, ty.typbasetype INTO kind, c.atttypid
                  FROM pg_catalog.pg_type ty WHERE ty.oid OPERATOR(pg_catalog.=) typ;
                EXIT WHEN kind OPERATOR(pg_catalog.<>) 'd';
                typ := c.atttypid;
            END LOOP;
            IF typ OPERATOR(pg_catalog.=) 'pg_catalog.bpchar'::pg_catalog.regtype THEN
                positions := positions OPERATOR(pg_catalog.||) c.ord;
            END IF;
        END LOOP;
        CONTINUE WHEN pg_catalog.cardinality(positions) OPERATOR(pg_catalog.=) 0;
        WITH old AS (
            DELETE FROM fencing.row_tombstone
             WHERE relid OPERATOR(pg_catalog.=) t.relid
            RETURNING key, hwm),
        rekeyed AS (
            SELECT ARRAY(SELECT CASE WHEN u.ord OPERATOR(pg_catalog.=) ANY (positions)
                                     THEN pg_catalog.regexp_replace(u.e, '(20)+$', '')
                                     ELSE u.e END
                           FROM pg_catalog.unnest(old.key) WITH ORDINALITY AS u(e, ord)
                          ORDER BY u.ord) AS key,
                   old.hwm
              FROM old)
        INSERT INTO fencing.row_tombstone (relid, key, hwm)
        SELECT t.relid, r.key, pg_catalog.max(r.hwm) FROM rekeyed r GROUP BY r.key;
    END LOOP;
END
$rekey$;

-- DDL must never silently orphan or bypass a high-water mark
-- (src/pg/ddl_checks.cpp).
----------------------------------------------------------------------------
-- Before ALTER TABLE / ALTER TYPE runs: refuses retyping the token or resource
-- column, changing or dropping a row-scope primary key that has tombstones,
-- and renaming an enum label that keys fencing state; carries fencing state
-- over on ATTACH and DETACH PARTITION. Written in C: it reads the command's
-- parse tree, which only ddl_command_start shows.
CREATE FUNCTION fencing.ddl_check_start() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'fencing_ddl_check_start' LANGUAGE C;
REVOKE ALL ON FUNCTION fencing.ddl_check_start() FROM PUBLIC;
CREATE EVENT TRIGGER fencing_ddl_check_start ON ddl_command_start
    WHEN TAG IN ('ALTER TABLE', 'ALTER TYPE')
    EXECUTE FUNCTION fencing.ddl_check_start();

-- The DDL hook also sees foreign tables: a foreign table fires no trigger for
-- writes routed to it, so one created as a partition of a fenced table is
-- refused (attaching one is refused when the parent's guards are synced).
CREATE OR REPLACE FUNCTION fencing.on_ddl_command_end() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    cmd record;
BEGIN
    FOR cmd IN SELECT * FROM pg_event_trigger_ddl_commands()
               WHERE object_type IN ('table', 'table column', 'foreign table')
    LOOP
        PERFORM fencing.on_table_ddl(cmd.objid);
    END LOOP;
END $$;

-- Tags the 1.0 event trigger does not list: CREATE SCHEMA ... CREATE TABLE
-- reports its tables under the CREATE SCHEMA tag (they are auto-protected like
-- any other CREATE TABLE), and CREATE FOREIGN TABLE ... PARTITION OF.
CREATE EVENT TRIGGER fencing_ddl_command_end_more ON ddl_command_end
    WHEN TAG IN ('CREATE SCHEMA', 'CREATE FOREIGN TABLE')
    EXECUTE FUNCTION fencing.on_ddl_command_end();

-- Drops the fencing_sql_drop trigger does not see (its tag list): tables
-- dropped by DROP TYPE ... CASCADE, DROP EXTENSION, DROP ACCESS METHOD ...
-- lose their policy and state; a protected table whose columns were dropped
-- by cascade (ALTER TYPE ... DROP ATTRIBUTE ... CASCADE, DROP DOMAIN ...
-- CASCADE, ...) goes through the same hook as ALTER TABLE ... DROP COLUMN.
CREATE FUNCTION fencing.on_sql_drop_cascade() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    dropped record;
BEGIN
    FOR dropped IN SELECT * FROM pg_event_trigger_dropped_objects()
                   WHERE object_type = 'table'
    LOOP
        IF dropped.objsubid = 0 THEN
            CONTINUE WHEN TG_TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED');
            DELETE FROM fencing.protected WHERE relid OPERATOR(pg_catalog.=) dropped.objid;
            DELETE FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) dropped.objid;
            DELETE FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) dropped.objid;
        END IF;
    END LOOP;
    FOR dropped IN SELECT DISTINCT d.objid FROM pg_event_trigger_dropped_objects() d
                   JOIN fencing.protected p ON p.relid OPERATOR(pg_catalog.=) d.objid
                   WHERE d.object_type = 'table column' AND TG_TAG OPERATOR(pg_catalog.<>) 'ALTER TABLE'
    LOOP
        PERFORM fencing.on_table_ddl(dropped.objid);
    END LOOP;
    -- A row-scope primary key keys the tombstones. ALTER TABLE is checked
    -- before it runs (fencing.ddl_check_start); a key dropped by cascade
    -- (DROP EXTENSION, DROP DOMAIN ... CASCADE, DROP OPERATOR CLASS ...
    -- CASCADE) is refused here, while the table still has tombstones.
    FOR dropped IN SELECT DISTINCT c.oid AS relid
                     FROM pg_event_trigger_dropped_objects() d
                     JOIN pg_catalog.pg_namespace n
                       ON n.nspname OPERATOR(pg_catalog.=) d.address_names[1]
                     JOIN pg_catalog.pg_class c
                       ON c.relnamespace OPERATOR(pg_catalog.=) n.oid
                      AND c.relname OPERATOR(pg_catalog.=) d.address_names[2]
                    WHERE d.object_type = 'table constraint'
                      AND TG_TAG OPERATOR(pg_catalog.<>) 'ALTER TABLE'
    LOOP
        IF EXISTS (SELECT 1 FROM fencing.row_tombstone t
                    WHERE t.relid OPERATOR(pg_catalog.=) dropped.relid)
           AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_index i
                            WHERE i.indrelid OPERATOR(pg_catalog.=) dropped.relid
                              AND i.indisprimary) THEN
            RAISE EXCEPTION 'cannot drop the primary key of fenced table %: it has tombstones',
                dropped.relid::pg_catalog.regclass
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = 'Tombstones are keyed by the primary key; without it a deleted key '
                               'could come back with a stale token.',
                      HINT = 'Remove them with fencing_reset() first (logged).';
        END IF;
    END LOOP;
END $$;
CREATE EVENT TRIGGER fencing_sql_drop_cascade ON sql_drop
    EXECUTE FUNCTION fencing.on_sql_drop_cascade();

-- Guard integrity: a table listed in fencing_protected is fenced.
--  * Guards are ordinary triggers (zz_fencing_guard_<relid>, ...), so pg_dump
--    dumps them and pg_upgrade carries them over; a dumped guard restored into
--    another database is replaced by guards installed from the policy there.
--  * Dropping a guard re-installs it; renaming, disabling or re-pointing one
--    is refused; no BEFORE ROW trigger may sort after the guard on a fenced
--    table (it could change the token after the check).
--  * Row scope: TRUNCATE leaves a tombstone for every row it removes.
--  * fencing_protected.guard_ok; fencing_verify_guards() reports and repairs.
-- The event triggers are ENABLE ALWAYS: restores with
-- session_replication_role = replica are covered too.
----------------------------------------------------------------------------
CREATE FUNCTION fencing.truncate_guard() RETURNS trigger
    AS 'MODULE_PATHNAME', 'fencing_truncate_guard' LANGUAGE C;
CREATE FUNCTION fencing.guard_status(pg_catalog.regclass) RETURNS pg_catalog.text
    AS 'MODULE_PATHNAME', 'fencing_guard_status' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION fencing.guard_status(pg_catalog.regclass) IS
    'NULL when the table''s guards match its policy; else what is wrong';

CREATE FUNCTION fencing.on_guard_ddl() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'fencing_on_guard_ddl' LANGUAGE C;
CREATE EVENT TRIGGER fencing_guard_ddl_start ON ddl_command_start
    WHEN TAG IN ('CREATE TRIGGER', 'ALTER TRIGGER', 'ALTER TABLE', 'ALTER INDEX')
    EXECUTE FUNCTION fencing.on_guard_ddl();
CREATE EVENT TRIGGER fencing_guard_ddl_end ON ddl_command_end
    WHEN TAG IN ('CREATE TRIGGER', 'DROP TRIGGER')
    EXECUTE FUNCTION fencing.on_guard_ddl();
ALTER EVENT TRIGGER fencing_guard_ddl_start ENABLE ALWAYS;
ALTER EVENT TRIGGER fencing_guard_ddl_end ENABLE ALWAYS;

-- Same columns in the same order, plus guard_ok: every guarded relation (each
-- leaf of a partitioned table) carries its guard, enabled and current.
CREATE OR REPLACE VIEW @extschema@.fencing_protected WITH (security_barrier = true) AS
    SELECT p.relid AS table_name, p.token_column, p.scope, p.resource_column,
           p.resource_namespace, p.on_stale, p.strict, p.require_token,
           fencing.guard_status(p.relid) IS NULL AS guard_ok
      FROM fencing.protected p
     WHERE pg_catalog.has_table_privilege(p.relid, 'SELECT');
GRANT SELECT ON @extschema@.fencing_protected TO PUBLIC;

CREATE FUNCTION @extschema@.fencing_verify_guards(repair pg_catalog.bool DEFAULT false)
    RETURNS TABLE (table_name pg_catalog.regclass, problem pg_catalog.text,
                   repaired pg_catalog.bool)
    AS 'MODULE_PATHNAME', 'fencing_verify_guards' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_verify_guards(pg_catalog.bool) IS
    'protected tables whose guards are missing, disabled or stale; repair => true re-installs them (table owner or superuser)';

----------------------------------------------------------------------------
-- Leases that issue tokens, and advancing an HWM before the first read
-- (src/pg/leases.cpp, src/pg/advance.cpp).
--
-- fencing.lease keeps, per (namespace, resource), the last token ever issued
-- and the current (or last) lease. The row is never deleted, so a token is
-- never issued twice; it is WAL-logged and changed only by transactions that
-- commit durably (pg/durability.hpp), and it is a configuration table, so
-- pg_dump keeps it. No sequence: a sequence can hand a value out again after
-- a crash or a failover.
----------------------------------------------------------------------------
CREATE TABLE fencing.lease (
    namespace   pg_catalog.text NOT NULL,
    resource    pg_catalog.text NOT NULL,
    holder      pg_catalog.text NOT NULL,
    token       pg_catalog.int8 NOT NULL CHECK (token OPERATOR(pg_catalog.>) 0),
    acquired_at pg_catalog.timestamptz NOT NULL,
    expires_at  pg_catalog.timestamptz NOT NULL,
    released_at pg_catalog.timestamptz,
    PRIMARY KEY (namespace, resource)
) WITH (fillfactor = 50);
ALTER TABLE fencing.lease SET ACCESS METHOD heap;
COMMENT ON TABLE fencing.lease IS
    'the last token issued per resource and its lease; rows are never deleted';
SELECT pg_catalog.pg_extension_config_dump('fencing.lease', '');

CREATE FUNCTION @extschema@.fencing_acquire(resource pg_catalog.text, holder pg_catalog.text,
        ttl pg_catalog.interval, wait pg_catalog.interval DEFAULT NULL,
        namespace pg_catalog.text DEFAULT 'default')
    RETURNS @extschema@.fencing_token
    AS 'MODULE_PATHNAME', 'fencing_acquire' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_acquire(pg_catalog.text, pg_catalog.text,
        pg_catalog.interval, pg_catalog.interval, pg_catalog.text) IS
    'a new token for resource and a lease until now + ttl, fencing the predecessor (raises the resource''s HWM); NULL while another lease is live';

CREATE FUNCTION @extschema@.fencing_renew(resource pg_catalog.text,
        token @extschema@.fencing_token, ttl pg_catalog.interval,
        namespace pg_catalog.text DEFAULT 'default')
    RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'fencing_renew' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_renew(pg_catalog.text, @extschema@.fencing_token,
        pg_catalog.interval, pg_catalog.text) IS
    'extends the live lease of token to now + ttl; false (and no change) when token is not the live lease''s';

CREATE FUNCTION @extschema@.fencing_release(resource pg_catalog.text,
        token @extschema@.fencing_token, namespace pg_catalog.text DEFAULT 'default')
    RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'fencing_release' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_release(pg_catalog.text, @extschema@.fencing_token,
        pg_catalog.text) IS
    'ends the live lease of token; false (and no change) when token is not the live lease''s';

-- Leases of the namespaces whose owner's privileges the caller has.
CREATE VIEW @extschema@.fencing_leases WITH (security_barrier = true) AS
    SELECT l.resource, l.namespace, l.holder,
           l.token::@extschema@.fencing_token AS token, l.acquired_at,
           -- a released lease ended when it was released (LEAST skips NULL)
           LEAST(l.expires_at, l.released_at) AS expires_at,
           (l.released_at IS NULL
            AND l.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()) AS live
      FROM fencing.lease l
     WHERE pg_catalog.pg_has_role(
             CASE WHEN l.namespace OPERATOR(pg_catalog.=) 'default'
                  THEN (SELECT e.extowner FROM pg_catalog.pg_extension e
                         WHERE e.extname OPERATOR(pg_catalog.=) 'fencing')
                  ELSE (SELECT n.owner::pg_catalog.oid FROM fencing.resource_namespace n
                         WHERE n.name OPERATOR(pg_catalog.=) l.namespace) END,
             'USAGE');
GRANT SELECT ON @extschema@.fencing_leases TO PUBLIC;

CREATE FUNCTION @extschema@.fencing_resource_advance(resource pg_catalog.text,
        token @extschema@.fencing_token, namespace pg_catalog.text DEFAULT 'default')
    RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'fencing_resource_advance' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_resource_advance(pg_catalog.text,
        @extschema@.fencing_token, pg_catalog.text) IS
    'raises the resource''s HWM to token (namespace owner''s privileges); false when it is already higher';

CREATE FUNCTION @extschema@.fencing_advance(target pg_catalog.regclass,
        token @extschema@.fencing_token, key pg_catalog.jsonb DEFAULT NULL)
    RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'fencing_advance' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_advance(pg_catalog.regclass,
        @extschema@.fencing_token, pg_catalog.jsonb) IS
    'raises a protected table''s HWM (row by primary key, resource by resource column, or the table) to token (UPDATE on the table); false when it is already higher';

-- 1.0 installed internal guards (lost by pg_dump and pg_upgrade): re-install
-- every guard the way this version does. Later update scripts call this too.
SELECT pg_catalog.count(*) FROM @extschema@.fencing_verify_guards(true);
