-- fencing 1.0
\echo Use "CREATE EXTENSION fencing" to load this file. \quit

-- Security (PostgreSQL docs, "Security Considerations for Extension Scripts"):
-- every object reference below is schema-qualified (pg_catalog or
-- @extschema@), so the script does not depend on the caller's search_path.

----------------------------------------------------------------------------
-- The fencing_token type: a non-negative 64-bit ordered value.
----------------------------------------------------------------------------
CREATE TYPE @extschema@.fencing_token;

CREATE FUNCTION @extschema@.fencing_token_in(pg_catalog.cstring)
    RETURNS @extschema@.fencing_token
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_out(@extschema@.fencing_token)
    RETURNS pg_catalog.cstring
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_recv(pg_catalog.internal)
    RETURNS @extschema@.fencing_token
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_send(@extschema@.fencing_token)
    RETURNS pg_catalog.bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE @extschema@.fencing_token (
    INPUT = @extschema@.fencing_token_in,
    OUTPUT = @extschema@.fencing_token_out,
    RECEIVE = @extschema@.fencing_token_recv,
    SEND = @extschema@.fencing_token_send,
    INTERNALLENGTH = 8,
    PASSEDBYVALUE,
    ALIGNMENT = double,
    STORAGE = plain,
    CATEGORY = 'N'
);
COMMENT ON TYPE @extschema@.fencing_token IS
    'fencing token: an opaque, ordered, non-negative 64-bit value (decimal or 0x hex input)';

-- Comparison, hashing and sort support share the int8 representation, so they
-- are PostgreSQL's own int8 functions, bound by their internal names.
CREATE FUNCTION @extschema@.fencing_token_eq(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS pg_catalog.bool AS 'int8eq' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_ne(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS pg_catalog.bool AS 'int8ne' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_lt(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS pg_catalog.bool AS 'int8lt' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_le(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS pg_catalog.bool AS 'int8le' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_gt(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS pg_catalog.bool AS 'int8gt' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_ge(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS pg_catalog.bool AS 'int8ge' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_cmp(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS pg_catalog.int4 AS 'btint8cmp' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_sortsupport(pg_catalog.internal)
    RETURNS pg_catalog.void AS 'btint8sortsupport' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_hash(@extschema@.fencing_token)
    RETURNS pg_catalog.int4 AS 'hashint8' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_hash_extended(@extschema@.fencing_token, pg_catalog.int8)
    RETURNS pg_catalog.int8 AS 'hashint8extended' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_smaller(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS @extschema@.fencing_token AS 'int8smaller' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_larger(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS @extschema@.fencing_token AS 'int8larger' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR @extschema@.= (
    LEFTARG = @extschema@.fencing_token, RIGHTARG = @extschema@.fencing_token,
    FUNCTION = @extschema@.fencing_token_eq,
    COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>),
    RESTRICT = pg_catalog.eqsel, JOIN = pg_catalog.eqjoinsel, HASHES, MERGES);
CREATE OPERATOR @extschema@.<> (
    LEFTARG = @extschema@.fencing_token, RIGHTARG = @extschema@.fencing_token,
    FUNCTION = @extschema@.fencing_token_ne,
    COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=),
    RESTRICT = pg_catalog.neqsel, JOIN = pg_catalog.neqjoinsel);
CREATE OPERATOR @extschema@.< (
    LEFTARG = @extschema@.fencing_token, RIGHTARG = @extschema@.fencing_token,
    FUNCTION = @extschema@.fencing_token_lt,
    COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=),
    RESTRICT = pg_catalog.scalarltsel, JOIN = pg_catalog.scalarltjoinsel);
CREATE OPERATOR @extschema@.<= (
    LEFTARG = @extschema@.fencing_token, RIGHTARG = @extschema@.fencing_token,
    FUNCTION = @extschema@.fencing_token_le,
    COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>),
    RESTRICT = pg_catalog.scalarlesel, JOIN = pg_catalog.scalarlejoinsel);
CREATE OPERATOR @extschema@.> (
    LEFTARG = @extschema@.fencing_token, RIGHTARG = @extschema@.fencing_token,
    FUNCTION = @extschema@.fencing_token_gt,
    COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=),
    RESTRICT = pg_catalog.scalargtsel, JOIN = pg_catalog.scalargtjoinsel);
CREATE OPERATOR @extschema@.>= (
    LEFTARG = @extschema@.fencing_token, RIGHTARG = @extschema@.fencing_token,
    FUNCTION = @extschema@.fencing_token_ge,
    COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<),
    RESTRICT = pg_catalog.scalargesel, JOIN = pg_catalog.scalargejoinsel);

CREATE OPERATOR CLASS @extschema@.fencing_token_ops
    DEFAULT FOR TYPE @extschema@.fencing_token USING btree AS
        OPERATOR 1 @extschema@.<,
        OPERATOR 2 @extschema@.<=,
        OPERATOR 3 @extschema@.=,
        OPERATOR 4 @extschema@.>=,
        OPERATOR 5 @extschema@.>,
        FUNCTION 1 @extschema@.fencing_token_cmp(@extschema@.fencing_token, @extschema@.fencing_token),
        FUNCTION 2 @extschema@.fencing_token_sortsupport(pg_catalog.internal);

CREATE OPERATOR CLASS @extschema@.fencing_token_hash_ops
    DEFAULT FOR TYPE @extschema@.fencing_token USING hash AS
        OPERATOR 1 @extschema@.=,
        FUNCTION 1 @extschema@.fencing_token_hash(@extschema@.fencing_token),
        FUNCTION 2 @extschema@.fencing_token_hash_extended(@extschema@.fencing_token, pg_catalog.int8);

CREATE AGGREGATE @extschema@.min(@extschema@.fencing_token) (
    SFUNC = @extschema@.fencing_token_smaller, STYPE = @extschema@.fencing_token,
    COMBINEFUNC = @extschema@.fencing_token_smaller, SORTOP = OPERATOR(@extschema@.<),
    PARALLEL = SAFE);
CREATE AGGREGATE @extschema@.max(@extschema@.fencing_token) (
    SFUNC = @extschema@.fencing_token_larger, STYPE = @extschema@.fencing_token,
    COMBINEFUNC = @extschema@.fencing_token_larger, SORTOP = OPERATOR(@extschema@.>),
    PARALLEL = SAFE);

-- Casts. Integers convert implicitly so "VALUES (34)", a function argument 34
-- and "WHERE fence < 35" all work with no operator ambiguity: the reverse
-- direction is explicit only, so a mixed comparison has exactly one candidate.
CREATE FUNCTION @extschema@.fencing_token(pg_catalog.int8)
    RETURNS @extschema@.fencing_token AS 'MODULE_PATHNAME', 'fencing_token_from_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token(pg_catalog.int4)
    RETURNS @extschema@.fencing_token AS 'MODULE_PATHNAME', 'fencing_token_from_int4'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (pg_catalog.int8 AS @extschema@.fencing_token)
    WITH FUNCTION @extschema@.fencing_token(pg_catalog.int8) AS IMPLICIT;
CREATE CAST (pg_catalog.int4 AS @extschema@.fencing_token)
    WITH FUNCTION @extschema@.fencing_token(pg_catalog.int4) AS IMPLICIT;
-- Same bits, every token is a valid bigint.
CREATE CAST (@extschema@.fencing_token AS pg_catalog.int8) WITHOUT FUNCTION;

-- ZooKeeper zxid helpers: zxid = (epoch << 32) | counter.
CREATE FUNCTION @extschema@.fencing_token_epoch(@extschema@.fencing_token)
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fencing_token_zxid_epoch'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_counter(@extschema@.fencing_token)
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fencing_token_zxid_counter'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_from_zxid(epoch pg_catalog.int8, counter pg_catalog.int8)
    RETURNS @extschema@.fencing_token AS 'MODULE_PATHNAME', 'fencing_token_from_zxid'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.fencing_token_epoch(@extschema@.fencing_token) IS
    'ZooKeeper zxid epoch: the high 32 bits of the token';
COMMENT ON FUNCTION @extschema@.fencing_token_counter(@extschema@.fencing_token) IS
    'ZooKeeper zxid counter: the low 32 bits of the token';
COMMENT ON FUNCTION @extschema@.fencing_token_from_zxid(pg_catalog.int8, pg_catalog.int8) IS
    'builds a token from a ZooKeeper zxid epoch and counter';

-- The extension's own state lives in its own schema, out of the user's way.
CREATE SCHEMA fencing;
REVOKE ALL ON SCHEMA fencing FROM PUBLIC;

----------------------------------------------------------------------------
-- Protected tables and durable high-water marks (HWMs).
----------------------------------------------------------------------------

-- One row per protected table: the single source of truth for its policy.
-- Dumped by pg_dump; restoring a row re-installs the table's guard triggers.
CREATE TABLE fencing.protected (
    relid pg_catalog.regclass PRIMARY KEY,
    token_column pg_catalog.name NOT NULL,
    scope pg_catalog.text NOT NULL DEFAULT 'row'
        CHECK (scope OPERATOR(pg_catalog.=) ANY (ARRAY['row', 'resource', 'table'])),
    resource_column pg_catalog.name,
    resource_namespace pg_catalog.text,
    on_stale pg_catalog.text NOT NULL DEFAULT 'error'
        CHECK (on_stale OPERATOR(pg_catalog.=) ANY (ARRAY['error', 'skip'])),
    strict pg_catalog.bool NOT NULL DEFAULT false,
    require_token pg_catalog.bool NOT NULL DEFAULT false,
    CHECK ((scope OPERATOR(pg_catalog.=) 'resource') OPERATOR(pg_catalog.=)
           (resource_column IS NOT NULL AND resource_namespace IS NOT NULL))
);

-- HWMs are written only by the extension, with tokens already validated as
-- non-negative, so these tables carry no CHECK constraints (a CHECK is
-- re-evaluated on every raise). fillfactor leaves room for HOT updates.

-- Resource scope: one HWM per (namespace, resource value), shared by every
-- table protected with the same namespace.
CREATE TABLE fencing.resource_hwm (
    namespace pg_catalog.text NOT NULL,
    resource pg_catalog.text NOT NULL,
    hwm pg_catalog.int8 NOT NULL,
    PRIMARY KEY (namespace, resource)
) WITH (fillfactor = 50);

-- Who owns each resource namespace: the owner of the first table protected in
-- it. Joining a namespace needs that role's privileges. Kept by role name, so
-- a dump restores anywhere; a namespace whose role is gone is claimed afresh.
CREATE TABLE fencing.resource_namespace (
    name pg_catalog.text PRIMARY KEY,
    owner pg_catalog.name NOT NULL
);

-- Table scope: one HWM per table.
CREATE TABLE fencing.table_hwm (
    relid pg_catalog.regclass PRIMARY KEY,
    hwm pg_catalog.int8 NOT NULL
) WITH (fillfactor = 50);

-- Row scope: the HWM a deleted row leaves under its primary key. The key is
-- the hex of each key column's binary send form, in index order.
CREATE TABLE fencing.row_tombstone (
    relid pg_catalog.regclass NOT NULL,
    key pg_catalog.text[] NOT NULL,
    hwm pg_catalog.int8 NOT NULL,
    PRIMARY KEY (relid, key)
);

-- Every fencing_reset(): who lowered which HWM, from what, when.
CREATE TABLE fencing.reset_log (
    reset_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    reset_by pg_catalog.name NOT NULL DEFAULT CURRENT_USER,
    target pg_catalog.text NOT NULL,
    key pg_catalog.text,
    old_hwm pg_catalog.int8
);

SELECT pg_catalog.pg_extension_config_dump('fencing.protected', '');
SELECT pg_catalog.pg_extension_config_dump('fencing.resource_hwm', '');
SELECT pg_catalog.pg_extension_config_dump('fencing.resource_namespace', '');
SELECT pg_catalog.pg_extension_config_dump('fencing.table_hwm', '');
SELECT pg_catalog.pg_extension_config_dump('fencing.row_tombstone', '');
SELECT pg_catalog.pg_extension_config_dump('fencing.reset_log', '');

-- The guard: a BEFORE ROW trigger function, installed by the extension as an
-- internal trigger named zz_fencing_guard on each protected table (or leaf).
CREATE FUNCTION fencing.guard() RETURNS trigger
    AS 'MODULE_PATHNAME', 'fencing_guard' LANGUAGE C;
-- Row scope also gets an AFTER INSERT recheck of the key's tombstone
-- (zz_fencing_recheck_<oid>), for INSERTs that raced a DELETE of the same key.
CREATE FUNCTION fencing.recheck() RETURNS trigger
    AS 'MODULE_PATHNAME', 'fencing_recheck' LANGUAGE C;

-- Restore: a dumped policy row may meet the row that auto-protection wrote
-- when CREATE TABLE was replayed; the dumped one wins.
CREATE FUNCTION fencing.protected_upsert() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE fencing.protected
       SET token_column = NEW.token_column, scope = NEW.scope,
           resource_column = NEW.resource_column,
           resource_namespace = NEW.resource_namespace,
           on_stale = NEW.on_stale, "strict" = NEW."strict",
           require_token = NEW.require_token
     WHERE relid = NEW.relid;
    IF FOUND THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER protected_upsert BEFORE INSERT ON fencing.protected
    FOR EACH ROW EXECUTE FUNCTION fencing.protected_upsert();

CREATE FUNCTION fencing.protected_sync() RETURNS trigger
    AS 'MODULE_PATHNAME', 'fencing_protected_sync' LANGUAGE C;
CREATE TRIGGER protected_sync AFTER INSERT OR UPDATE OR DELETE ON fencing.protected
    FOR EACH ROW EXECUTE FUNCTION fencing.protected_sync();
-- Fire in replica mode too (session_replication_role = replica restores).
ALTER TABLE fencing.protected ENABLE ALWAYS TRIGGER protected_upsert;
ALTER TABLE fencing.protected ENABLE ALWAYS TRIGGER protected_sync;

CREATE FUNCTION @extschema@.fencing_protect(
        target pg_catalog.regclass,
        token_column pg_catalog.name DEFAULT NULL,
        scope pg_catalog.text DEFAULT 'row',
        resource_column pg_catalog.name DEFAULT NULL,
        resource_namespace pg_catalog.text DEFAULT NULL,
        on_stale pg_catalog.text DEFAULT 'error',
        strict pg_catalog.bool DEFAULT false,
        require_token pg_catalog.bool DEFAULT false)
    RETURNS void AS 'MODULE_PATHNAME', 'fencing_protect' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_protect(pg_catalog.regclass, pg_catalog.name, pg_catalog.text,
        pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.bool, pg_catalog.bool) IS
    'fences a table: writes whose token is below the high-water mark are rejected (owner only)';

CREATE FUNCTION @extschema@.fencing_unprotect(target pg_catalog.regclass)
    RETURNS pg_catalog.bool AS 'MODULE_PATHNAME', 'fencing_unprotect' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_unprotect(pg_catalog.regclass) IS
    'removes a table''s fencing; its high-water marks are kept (owner only)';

CREATE VIEW @extschema@.fencing_protected AS
    SELECT p.relid AS table_name, p.token_column, p.scope, p.resource_column,
           p.resource_namespace, p.on_stale, p.strict, p.require_token
      FROM fencing.protected p
     WHERE pg_catalog.has_table_privilege(p.relid, 'SELECT');
GRANT SELECT ON @extschema@.fencing_protected TO PUBLIC;

-- DDL hooks: auto-protection, renames, dropped columns, partitions, drops.
CREATE FUNCTION fencing.on_table_ddl(pg_catalog.oid) RETURNS void
    AS 'MODULE_PATHNAME', 'fencing_on_table_ddl' LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION fencing.on_table_ddl(pg_catalog.oid) FROM PUBLIC;

-- Event trigger functions cannot be called directly, so SECURITY DEFINER here
-- only lets the hook read and write the extension's own tables.
CREATE FUNCTION fencing.on_ddl_command_end() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    cmd record;
BEGIN
    FOR cmd IN SELECT * FROM pg_event_trigger_ddl_commands()
               WHERE object_type IN ('table', 'table column')
    LOOP
        PERFORM fencing.on_table_ddl(cmd.objid);
    END LOOP;
END $$;

CREATE FUNCTION fencing.on_sql_drop() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    dropped record;
BEGIN
    FOR dropped IN SELECT * FROM pg_event_trigger_dropped_objects()
                   WHERE object_type = 'table' AND objsubid = 0
    LOOP
        DELETE FROM fencing.protected WHERE relid = dropped.objid;
        DELETE FROM fencing.table_hwm WHERE relid = dropped.objid;
        DELETE FROM fencing.row_tombstone WHERE relid = dropped.objid;
    END LOOP;
END $$;

CREATE EVENT TRIGGER fencing_ddl_command_end ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE', 'CREATE TABLE AS', 'SELECT INTO')
    EXECUTE FUNCTION fencing.on_ddl_command_end();
CREATE EVENT TRIGGER fencing_sql_drop ON sql_drop
    WHEN TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED')
    EXECUTE FUNCTION fencing.on_sql_drop();

----------------------------------------------------------------------------
-- Reading and resetting HWMs. The resource variants have their own names: an
-- overload on text would capture fencing_high_water('tbl', '{...}') calls,
-- because unknown literals prefer text over regclass.
----------------------------------------------------------------------------
CREATE FUNCTION @extschema@.fencing_high_water(target pg_catalog.regclass, key pg_catalog.jsonb DEFAULT NULL)
    RETURNS @extschema@.fencing_token AS 'MODULE_PATHNAME', 'fencing_high_water_table'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION @extschema@.fencing_high_water(pg_catalog.regclass, pg_catalog.jsonb) IS
    'current high-water mark of a row (key = primary key), a resource (key = {resource_column: value}) or a table';
CREATE FUNCTION @extschema@.fencing_resource_high_water(resource pg_catalog.text, namespace pg_catalog.text DEFAULT 'default')
    RETURNS @extschema@.fencing_token AS 'MODULE_PATHNAME', 'fencing_high_water_resource'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION @extschema@.fencing_resource_high_water(pg_catalog.text, pg_catalog.text) IS
    'current high-water mark of a named resource';
CREATE FUNCTION @extschema@.fencing_reset(target pg_catalog.regclass, key pg_catalog.jsonb DEFAULT NULL)
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fencing_reset_table' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_reset(pg_catalog.regclass, pg_catalog.jsonb) IS
    'removes high-water marks of a table (owner only; logged in fencing.reset_log)';
CREATE FUNCTION @extschema@.fencing_resource_reset(resource pg_catalog.text, namespace pg_catalog.text DEFAULT 'default')
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fencing_reset_resource' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_resource_reset(pg_catalog.text, pg_catalog.text) IS
    'removes a named resource''s high-water mark (superuser only; logged in fencing.reset_log)';

----------------------------------------------------------------------------
-- Fenced DML: one atomic statement per call; 0 rows when the token is stale.
----------------------------------------------------------------------------
CREATE FUNCTION @extschema@.fenced_update(target pg_catalog.regclass, token @extschema@.fencing_token,
                                          key pg_catalog.jsonb, changes pg_catalog.jsonb)
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fenced_update' LANGUAGE C VOLATILE;
CREATE FUNCTION @extschema@.fenced_delete(target pg_catalog.regclass, token @extschema@.fencing_token,
                                          key pg_catalog.jsonb)
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fenced_delete' LANGUAGE C VOLATILE;
CREATE FUNCTION @extschema@.fenced_upsert(target pg_catalog.regclass, token @extschema@.fencing_token,
                                          "row" pg_catalog.jsonb)
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fenced_upsert' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fenced_update(pg_catalog.regclass, @extschema@.fencing_token, pg_catalog.jsonb, pg_catalog.jsonb) IS
    'UPDATE target SET changes, token column = token WHERE key; returns rows written, 0 when stale';
COMMENT ON FUNCTION @extschema@.fenced_delete(pg_catalog.regclass, @extschema@.fencing_token, pg_catalog.jsonb) IS
    'DELETE FROM target WHERE key, fenced by token; returns rows deleted, 0 when stale';
COMMENT ON FUNCTION @extschema@.fenced_upsert(pg_catalog.regclass, @extschema@.fencing_token, pg_catalog.jsonb) IS
    'INSERT row, or UPDATE it on primary-key conflict where the token allows; returns rows written, 0 when stale';
