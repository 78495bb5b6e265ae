-- fencing 1.5 -> 1.6
\echo Use "ALTER EXTENSION fencing UPDATE TO '1.6'" to load this file. \quit

-- Each section below belongs to one change; sections are appended, never
-- interleaved, so that independent changes merge cleanly.

-- == table swaps, recreates and drops keep the fence ==
-- Fencing state belongs to the logical table. Two ways it follows one:
--  * fencing_transfer_state(source, target): a swap tool (pg-osc, pgroll,
--    gh-ost's model) or a migration hands a table's whole state (policy,
--    tombstones, table HWM, tombstone floor and retirement settings) to the
--    table that replaces it; the source is swapped out (refuses writes).
--  * DROP TABLE / DROP SCHEMA / DROP OWNED of a fenced table that holds state
--    keeps its policy and state under its qualified name until the end of
--    the transaction; a table that takes that name in the same transaction
--    (CREATE, RENAME, SET SCHEMA) adopts them (Alembic's batch recreate:
--    create tmp, copy, DROP, RENAME tmp, in one transaction). A DROP that no
--    table follows deletes the table's data and its state, as before.
-- docs/migrations.md has the recipes.

-- Kept state of fenced tables dropped by the current transaction, by the
-- table's quoted qualified name. Rows of other (ended) transactions are inert
-- and removed by the next DROP. Not dumped: nothing in it outlives its
-- transaction.
CREATE TABLE fencing.dropped_state (
    table_name      pg_catalog.text PRIMARY KEY,      -- format('%I.%I', schema, table)
    policy          pg_catalog.jsonb NOT NULL,        -- its fencing.protected row, relid left out
    token_type      pg_catalog.text NOT NULL,         -- format_type of the token column
    resource_type   pg_catalog.text,                  -- ... of the resource column
    key_signature   pg_catalog.text[],                -- primary key: 'column type', index order
    table_hwm       pg_catalog.int8,
    tombstone_floor pg_catalog.jsonb,                 -- its fencing.tombstone_floor row, relid left out
    owner           pg_catalog.name NOT NULL,         -- the dropped table's owner
    dropped_at      pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    dropped_xid     pg_catalog.xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id()
);
ALTER TABLE fencing.dropped_state SET ACCESS METHOD heap;
CREATE TABLE fencing.dropped_tombstone (
    table_name pg_catalog.text NOT NULL
        REFERENCES fencing.dropped_state ON DELETE CASCADE ON UPDATE CASCADE,
    key        pg_catalog.text[] NOT NULL,
    hwm        pg_catalog.int8 NOT NULL,
    raised_at  pg_catalog.timestamptz NOT NULL,
    PRIMARY KEY (table_name, key)
);
ALTER TABLE fencing.dropped_tombstone SET ACCESS METHOD heap;

-- The type of rel's column col (NULL when absent), and rel's primary key as
-- 'column type' in index order: what tombstone keys are encoded from.
CREATE FUNCTION fencing.column_type(rel pg_catalog.oid, col pg_catalog.name)
    RETURNS pg_catalog.text LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a
     WHERE a.attrelid OPERATOR(pg_catalog.=) rel AND a.attname OPERATOR(pg_catalog.=) col
       AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
$$;
CREATE FUNCTION fencing.key_signature(rel pg_catalog.oid)
    RETURNS pg_catalog.text[] LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.array_agg(pg_catalog.format('%I %s', a.attname,
                                pg_catalog.format_type(a.atttypid, a.atttypmod)) ORDER BY k.n)
      FROM pg_catalog.pg_index i
      CROSS JOIN LATERAL pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY AS k(attnum, n)
      JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid
                                    AND a.attnum OPERATOR(pg_catalog.=) k.attnum
     WHERE i.indrelid OPERATOR(pg_catalog.=) rel AND i.indisprimary
$$;

-- Why target cannot take state written under policy p for a table whose
-- token column type, resource column type and key signature were these, or
-- NULL when it can. The key must match when tombstones come along (they are
-- keyed by its encoding) or the scope is row and the source had a key.
CREATE FUNCTION fencing.state_misfit(target pg_catalog.oid, p fencing.protected,
        token_type pg_catalog.text, resource_type pg_catalog.text,
        key_signature pg_catalog.text[], has_tombstones pg_catalog.bool)
    RETURNS pg_catalog.text LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    target_key pg_catalog.text[] := fencing.key_signature(target);
BEGIN
    IF fencing.column_type(target, p.token_column) IS DISTINCT FROM token_type THEN
        RETURN pg_catalog.format('it has no token column %I of type %s', p.token_column, token_type);
    END IF;
    IF p.scope OPERATOR(pg_catalog.=) 'resource'
       AND fencing.column_type(target, p.resource_column) IS DISTINCT FROM resource_type THEN
        RETURN pg_catalog.format('it has no resource column %I of type %s', p.resource_column, resource_type);
    END IF;
    -- A dropped row-scope table whose primary key was dropped first (Alembic's
    -- batch recreate of a table without tombstones) signed nothing: any key.
    IF (has_tombstones OR (p.scope OPERATOR(pg_catalog.=) 'row'
                           AND COALESCE(pg_catalog.cardinality(key_signature), 0) OPERATOR(pg_catalog.>) 0))
       AND target_key IS DISTINCT FROM key_signature THEN
        RETURN pg_catalog.format('its primary key (%s) is not (%s), which keys the tombstones',
                                 pg_catalog.array_to_string(target_key, ', '),
                                 pg_catalog.array_to_string(key_signature, ', '));
    END IF;
    IF (SELECT c.relispartition FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) target) THEN
        RETURN 'it is a partition (its fenced table''s policy is its own)';
    END IF;
    -- Its own state must keep judging it: a target fenced in table or
    -- resource scope would lose its table HWM or namespace to the new policy.
    IF EXISTS (SELECT 1 FROM fencing.protected t
                WHERE t.relid OPERATOR(pg_catalog.=) target
                  AND t.scope OPERATOR(pg_catalog.<>) 'row'
                  AND (t.scope, t.resource_namespace) IS DISTINCT FROM (p.scope, p.resource_namespace)) THEN
        RETURN 'it is fenced in ' || (SELECT t.scope FROM fencing.protected t
                                       WHERE t.relid OPERATOR(pg_catalog.=) target)
               || ' scope itself, and its own high-water marks would no longer judge it'
               ' (leave the new table in row scope, as CREATE TABLE ... LIKE fences it)';
    END IF;
    RETURN NULL;
END $$;

-- Fences target by p (relid replaced) and drops a swapped-out marker on it.
-- fencing.protected_upsert turns the INSERT into an UPDATE when target is
-- fenced already; fencing.protected_sync installs its guards.
CREATE FUNCTION fencing.install_policy(target pg_catalog.oid, p fencing.protected)
    RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    marked pg_catalog.regclass;
BEGIN
    FOR marked IN SELECT t.tgrelid::pg_catalog.regclass FROM pg_catalog.pg_trigger t
                   WHERE t.tgname OPERATOR(pg_catalog.=) 'zz_fencing_swapped_out'
                     AND (t.tgrelid OPERATOR(pg_catalog.=) target
                          OR t.tgrelid IN (SELECT r.relid FROM pg_catalog.pg_partition_tree(target) r))
    LOOP
        EXECUTE pg_catalog.format('DROP TRIGGER zz_fencing_swapped_out ON %s', marked);
    END LOOP;
    p.relid := target;
    INSERT INTO fencing.protected SELECT p.*;
END $$;

-- Raises target's table HWM, tombstone floor (and retirement settings, when
-- given) to at least these; NULLs raise nothing.
CREATE FUNCTION fencing.merge_table_state(target pg_catalog.oid, kept_hwm pg_catalog.int8,
        tfloor pg_catalog.jsonb)
    RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    f fencing.tombstone_floor;
BEGIN
    IF kept_hwm IS NOT NULL THEN
        INSERT INTO fencing.table_hwm AS t (relid, hwm) VALUES (target, kept_hwm)
            ON CONFLICT (relid) DO UPDATE
            SET hwm = GREATEST(t.hwm, excluded.hwm);
    END IF;
    IF tfloor IS NOT NULL THEN
        f := pg_catalog.jsonb_populate_record(NULL::fencing.tombstone_floor,
                 tfloor OPERATOR(pg_catalog.||)
                 pg_catalog.jsonb_build_object('relid', target::pg_catalog.text));
        INSERT INTO fencing.tombstone_floor AS t SELECT f.*
            ON CONFLICT (relid) DO UPDATE
            SET floor = GREATEST(t.floor, excluded.floor),
                enabled = excluded.enabled, idle = excluded.idle,
                retired = t.retired OPERATOR(pg_catalog.+) excluded.retired,
                retired_at = GREATEST(t.retired_at, excluded.retired_at);
    END IF;
END $$;

-- A row-scope table whose primary key was dropped while it had tombstones
-- (Alembic's batch recreate drops the old table's constraints before it
-- copies and drops it): the key the tombstones are keyed by, held until the
-- same key is added back. Meanwhile the table refuses writes
-- (zz_fencing_key_detached): without its key an INSERT of a deleted key could
-- not be judged, nor a DELETE leave a tombstone. A DROP keeps the tombstones
-- under the held key.
CREATE TABLE fencing.held_key (
    relid         pg_catalog.regclass PRIMARY KEY,
    key_signature pg_catalog.text[] NOT NULL
);
ALTER TABLE fencing.held_key SET ACCESS METHOD heap;
SELECT pg_catalog.pg_extension_config_dump('fencing.held_key', '');

-- Before ALTER TABLE ... DROP CONSTRAINT drops rel's primary key
-- (fencing.ddl_check_start).
CREATE FUNCTION fencing.hold_key(rel pg_catalog.oid)
    RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO fencing.held_key (relid, key_signature)
    VALUES (rel, fencing.key_signature(rel)) ON CONFLICT (relid) DO NOTHING;
END $$;
REVOKE ALL ON FUNCTION fencing.hold_key(pg_catalog.oid) FROM PUBLIC;

-- rel's primary key as its tombstones are keyed: its own, or the one held.
CREATE FUNCTION fencing.tombstone_key_signature(rel pg_catalog.oid)
    RETURNS pg_catalog.text[] LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT COALESCE((SELECT h.key_signature FROM fencing.held_key h
                      WHERE h.relid OPERATOR(pg_catalog.=) rel), fencing.key_signature(rel))
$$;

CREATE FUNCTION fencing.key_detached() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'fenced table %.% has tombstones but no primary key',
            pg_catalog.quote_ident(TG_TABLE_SCHEMA), pg_catalog.quote_ident(TG_TABLE_NAME)
        USING ERRCODE = 'object_not_in_prerequisite_state',
              DETAIL = pg_catalog.format('Its tombstones are keyed by (%s); without that key a '
                       'write cannot be judged by them.', TG_ARGV[0]),
              HINT = 'Add the primary key back, or drop the table (its state is kept under its '
                     'name for the table that takes it).';
END $$;

-- After ALTER TABLE on rel: a held key is released when the same key is
-- back, refused when another key took its place, and the table refuses
-- writes while it has none.
CREATE FUNCTION fencing.follow_held_key(rel pg_catalog.oid)
    RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    held pg_catalog.text[];
    now_key pg_catalog.text[] := fencing.key_signature(rel);
    marked pg_catalog.bool;
BEGIN
    SELECT h.key_signature INTO held FROM fencing.held_key h WHERE h.relid OPERATOR(pg_catalog.=) rel;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    marked := EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                       WHERE t.tgrelid OPERATOR(pg_catalog.=) rel
                         AND t.tgname OPERATOR(pg_catalog.=) 'zz_fencing_key_detached');
    IF EXISTS (SELECT 1 FROM pg_catalog.unnest(held) AS k(col)
                WHERE k.col OPERATOR(pg_catalog.<>) ALL (
                      SELECT pg_catalog.format('%I %s', a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod))
                        FROM pg_catalog.pg_attribute a
                       WHERE a.attrelid OPERATOR(pg_catalog.=) rel AND a.attnum OPERATOR(pg_catalog.>) 0
                         AND NOT a.attisdropped)) THEN
        RAISE EXCEPTION 'cannot change the columns of the dropped primary key of fenced table %: it has tombstones',
                rel::pg_catalog.regclass
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = pg_catalog.format('Its tombstones are keyed by (%s); the key is held until it is added back.',
                           pg_catalog.array_to_string(held, ', ')),
                  HINT = 'Keep those columns as they are, and add the primary key back.';
    END IF;
    IF now_key IS NULL THEN
        IF NOT marked THEN
            EXECUTE pg_catalog.format(
                'CREATE TRIGGER zz_fencing_key_detached BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE'
                ' ON %s FOR EACH STATEMENT EXECUTE FUNCTION fencing.key_detached(%L)',
                rel::pg_catalog.regclass, pg_catalog.array_to_string(held, ', '));
            EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER zz_fencing_key_detached',
                                      rel::pg_catalog.regclass);
        END IF;
        RETURN;
    END IF;
    IF now_key IS DISTINCT FROM held THEN
        RAISE EXCEPTION 'cannot change the primary key of fenced table %: it has tombstones',
                rel::pg_catalog.regclass
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = pg_catalog.format('Its tombstones are keyed by (%s), not (%s).',
                           pg_catalog.array_to_string(held, ', '), pg_catalog.array_to_string(now_key, ', ')),
                  HINT = 'Add the primary key the tombstones are keyed by.';
    END IF;
    DELETE FROM fencing.held_key WHERE relid OPERATOR(pg_catalog.=) rel;
    IF marked THEN
        EXECUTE pg_catalog.format('DROP TRIGGER zz_fencing_key_detached ON %s', rel::pg_catalog.regclass);
    END IF;
END $$;
REVOKE ALL ON FUNCTION fencing.follow_held_key(pg_catalog.oid) FROM PUBLIC;

-- fencing_transfer_state()'s work, once the caller owns both tables and has
-- locked them (src/pg/api/transfer.cpp).
CREATE FUNCTION fencing.transfer_state_apply(source pg_catalog.oid, target pg_catalog.oid)
    RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p fencing.protected;
    misfit pg_catalog.text;
    kept_hwm pg_catalog.int8;
    tfloor pg_catalog.jsonb;
    part pg_catalog.regclass;
BEGIN
    SELECT * INTO p FROM fencing.protected WHERE relid OPERATOR(pg_catalog.=) source;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table % is not protected by fencing', source::pg_catalog.regclass
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Transfer from the fenced table being replaced (a partitioned table''s parent, not a partition).';
    END IF;
    misfit := fencing.state_misfit(target, p, fencing.column_type(source, p.token_column),
                  fencing.column_type(source, p.resource_column), fencing.tombstone_key_signature(source),
                  EXISTS (SELECT 1 FROM fencing.row_tombstone t
                           WHERE t.relid OPERATOR(pg_catalog.=) source));
    IF misfit IS NOT NULL THEN
        RAISE EXCEPTION 'cannot transfer the fencing state of % to %: %',
                source::pg_catalog.regclass, target::pg_catalog.regclass, misfit
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'The state would not judge the writes of the new table as it judged the old one''s.',
                  HINT = 'Give the new table the columns and primary key the policy names, then transfer.';
    END IF;
    INSERT INTO fencing.row_tombstone AS t (relid, key, hwm, raised_at)
        SELECT target, s.key, s.hwm, s.raised_at FROM fencing.row_tombstone s
         WHERE s.relid OPERATOR(pg_catalog.=) source
        ON CONFLICT (relid, key) DO UPDATE
        SET hwm = GREATEST(t.hwm, excluded.hwm),
            raised_at = GREATEST(t.raised_at, excluded.raised_at);
    DELETE FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) source;
    DELETE FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) source RETURNING table_hwm.hwm INTO kept_hwm;
    DELETE FROM fencing.tombstone_floor f WHERE f.relid OPERATOR(pg_catalog.=) source
        RETURNING pg_catalog.to_jsonb(f) OPERATOR(pg_catalog.-) 'relid' INTO tfloor;
    PERFORM fencing.merge_table_state(target, kept_hwm, tfloor);
    DELETE FROM fencing.held_key WHERE relid OPERATOR(pg_catalog.=) source;
    DELETE FROM fencing.protected WHERE relid OPERATOR(pg_catalog.=) source;
    PERFORM fencing.install_policy(target, p);
    -- The old table refuses every write from now on: a writer that resolved
    -- it before the swap must not write where nothing judges it. Statement
    -- triggers of a partitioned table do not fire for writes that name a
    -- partition: every table of the tree gets one.
    FOR part IN SELECT source::pg_catalog.regclass
                UNION SELECT t.relid FROM pg_catalog.pg_partition_tree(source) t LOOP
        EXECUTE pg_catalog.format(
            'CREATE TRIGGER zz_fencing_swapped_out BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE'
            ' ON %s FOR EACH STATEMENT EXECUTE FUNCTION fencing.swapped_out(%L)',
            part, target::pg_catalog.oid::pg_catalog.text);
        EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER zz_fencing_swapped_out', part);
    END LOOP;
END $$;
REVOKE ALL ON FUNCTION fencing.transfer_state_apply(pg_catalog.oid, pg_catalog.oid) FROM PUBLIC;

CREATE FUNCTION fencing.swapped_out() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    target pg_catalog.text := (SELECT c.oid::pg_catalog.regclass::pg_catalog.text
                                 FROM pg_catalog.pg_class c
                                WHERE c.oid OPERATOR(pg_catalog.=) TG_ARGV[0]::pg_catalog.oid);
BEGIN
    RAISE EXCEPTION 'table %.% was swapped out: its fencing state belongs to %',
            pg_catalog.quote_ident(TG_TABLE_SCHEMA), pg_catalog.quote_ident(TG_TABLE_NAME),
            COALESCE(target, 'a table that is gone')
        USING ERRCODE = 'object_not_in_prerequisite_state',
              DETAIL = 'fencing_transfer_state() handed its policy, tombstones and high-water '
                       'marks on; writes here would not be judged by them.',
              HINT = 'Write to the table that replaced it (look the name up again), or '
                     'transfer the state back with fencing_transfer_state().';
END $$;

CREATE FUNCTION @extschema@.fencing_transfer_state(source pg_catalog.regclass,
        target pg_catalog.regclass)
    RETURNS void AS 'MODULE_PATHNAME', 'fencing_transfer_state' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_transfer_state(pg_catalog.regclass, pg_catalog.regclass) IS
    'hands a fenced table''s policy, tombstones, table HWM and floor to the table that replaces it; the source then refuses writes (owner of both)';

-- Before a DROP removes fenced table rel (ddl_command_start, while its
-- catalog still stands): keeps its policy and state under its name when it
-- holds state (tombstones, a table HWM, a floor) or is fenced in table or
-- resource scope, or when the DROP kept its rows' tokens (kept_rows: in
-- backend memory, checked by fencing.require_dropped_rows at adoption). A
-- name kept already merges (the higher HWMs win).
CREATE FUNCTION fencing.keep_dropped_state(rel pg_catalog.oid, kept_rows pg_catalog.bool DEFAULT false)
    RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p fencing.protected;
    name pg_catalog.text;
    kept_hwm pg_catalog.int8;
    tfloor pg_catalog.jsonb;
BEGIN
    SELECT * INTO p FROM fencing.protected WHERE relid OPERATOR(pg_catalog.=) rel;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT t.hwm INTO kept_hwm FROM fencing.table_hwm t WHERE t.relid OPERATOR(pg_catalog.=) rel;
    SELECT pg_catalog.to_jsonb(f) OPERATOR(pg_catalog.-) 'relid' INTO tfloor
      FROM fencing.tombstone_floor f WHERE f.relid OPERATOR(pg_catalog.=) rel;
    IF p.scope OPERATOR(pg_catalog.=) 'row' AND kept_hwm IS NULL AND tfloor IS NULL
       AND NOT COALESCE(kept_rows, false) AND NOT EXISTS (SELECT 1 FROM fencing.row_tombstone t WHERE t.relid OPERATOR(pg_catalog.=) rel) THEN
        RETURN;
    END IF;
    SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) INTO name
      FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE c.oid OPERATOR(pg_catalog.=) rel;
    DELETE FROM fencing.dropped_state d
     WHERE d.dropped_xid OPERATOR(pg_catalog.<>) pg_catalog.pg_current_xact_id();
    INSERT INTO fencing.dropped_state AS d (table_name, policy, token_type, resource_type,
                                            key_signature, table_hwm, tombstone_floor, owner)
    SELECT name, pg_catalog.to_jsonb(p) OPERATOR(pg_catalog.-) 'relid',
           fencing.column_type(rel, p.token_column), fencing.column_type(rel, p.resource_column),
           fencing.tombstone_key_signature(rel), kept_hwm, tfloor, pg_catalog.pg_get_userbyid(c.relowner)
      FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) rel
    ON CONFLICT (table_name) DO UPDATE
    SET policy = excluded.policy, token_type = excluded.token_type,
        resource_type = excluded.resource_type, key_signature = excluded.key_signature,
        table_hwm = GREATEST(d.table_hwm, excluded.table_hwm),
        tombstone_floor = CASE WHEN (d.tombstone_floor OPERATOR(pg_catalog.->>) 'floor')::pg_catalog.int8
                                    OPERATOR(pg_catalog.>) COALESCE((excluded.tombstone_floor
                                    OPERATOR(pg_catalog.->>) 'floor')::pg_catalog.int8, -1)
                               THEN d.tombstone_floor ELSE excluded.tombstone_floor END,
        owner = excluded.owner, dropped_at = excluded.dropped_at;
    INSERT INTO fencing.dropped_tombstone AS d (table_name, key, hwm, raised_at)
        SELECT name, t.key, t.hwm, t.raised_at FROM fencing.row_tombstone t
         WHERE t.relid OPERATOR(pg_catalog.=) rel
        ON CONFLICT (table_name, key) DO UPDATE
        SET hwm = GREATEST(d.hwm, excluded.hwm),
            raised_at = GREATEST(d.raised_at, excluded.raised_at);
    DELETE FROM fencing.held_key WHERE relid OPERATOR(pg_catalog.=) rel;
    RAISE DEBUG 'fencing state of dropped table % is kept under its name until the transaction ends', name;
END $$;
REVOKE ALL ON FUNCTION fencing.keep_dropped_state(pg_catalog.oid, pg_catalog.bool) FROM PUBLIC;

-- After CREATE TABLE, ALTER TABLE ... RENAME / SET SCHEMA (any ALTER), ALTER
-- SCHEMA ... RENAME (each table of the schema): a
-- table that takes the name of a fenced table dropped by this transaction
-- takes its kept state, or is refused.
-- Raises 40001 when rel lacks a row (or a row's token) that the fenced table
-- of that name, dropped by this transaction, held at its DROP.
CREATE FUNCTION fencing.require_dropped_rows(rel pg_catalog.oid, name pg_catalog.text,
        token_column pg_catalog.text, scope pg_catalog.text)
    RETURNS void AS 'MODULE_PATHNAME', 'fencing_require_dropped_rows' LANGUAGE C VOLATILE STRICT;
REVOKE ALL ON FUNCTION fencing.require_dropped_rows(pg_catalog.oid, pg_catalog.text, pg_catalog.text, pg_catalog.text) FROM PUBLIC;

CREATE FUNCTION fencing.adopt_dropped_state(rel pg_catalog.oid)
    RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    name pg_catalog.text;
    d fencing.dropped_state;
    p fencing.protected;
    misfit pg_catalog.text;
BEGIN
    SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) INTO name
      FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE c.oid OPERATOR(pg_catalog.=) rel AND c.relkind IN ('r', 'p')
       AND c.relpersistence OPERATOR(pg_catalog.<>) 't';
    SELECT * INTO d FROM fencing.dropped_state s
     WHERE s.table_name OPERATOR(pg_catalog.=) name
       AND s.dropped_xid OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id_if_assigned()
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    p := pg_catalog.jsonb_populate_record(NULL::fencing.protected,
             d.policy OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('relid', rel::pg_catalog.text));
    misfit := fencing.state_misfit(rel, p, d.token_type, d.resource_type, d.key_signature,
                  EXISTS (SELECT 1 FROM fencing.dropped_tombstone t WHERE t.table_name OPERATOR(pg_catalog.=) name));
    IF misfit IS NOT NULL THEN
        RAISE EXCEPTION 'table % takes the name of a fenced table this transaction dropped, but cannot take its fencing state: %',
                name, misfit
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'The dropped table''s policy, tombstones and high-water marks would be lost '
                           'when the transaction ends, and writes it refused would be accepted.',
                  HINT = pg_catalog.format('Give the new table the columns and primary key the policy names, '
                         'or, to start it afresh, discard the state first: SELECT fencing_forget_dropped(%L) '
                         '(logged in fencing.reset_log).', name);
    END IF;
    INSERT INTO fencing.row_tombstone AS t (relid, key, hwm, raised_at)
        SELECT rel, s.key, s.hwm, s.raised_at FROM fencing.dropped_tombstone s
         WHERE s.table_name OPERATOR(pg_catalog.=) name
        ON CONFLICT (relid, key) DO UPDATE
        SET hwm = GREATEST(t.hwm, excluded.hwm),
            raised_at = GREATEST(t.raised_at, excluded.raised_at);
    -- A copy that missed a write committed before the DROP: refused (40001).
    PERFORM fencing.require_dropped_rows(rel, name, p.token_column::pg_catalog.text,
                                         p.scope::pg_catalog.text);
    PERFORM fencing.merge_table_state(rel, d.table_hwm, d.tombstone_floor);
    DELETE FROM fencing.dropped_state s WHERE s.table_name OPERATOR(pg_catalog.=) name;
    PERFORM fencing.install_policy(rel, p);
    RAISE NOTICE 'table % takes the fencing state of the dropped table of the same name', name
        USING DETAIL = pg_catalog.format('Fenced in %s scope again, with its tombstones and high-water marks.', p.scope);
END $$;
REVOKE ALL ON FUNCTION fencing.adopt_dropped_state(pg_catalog.oid) FROM PUBLIC;

CREATE FUNCTION fencing.on_ddl_adopt_dropped() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    cmd record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM fencing.dropped_state s
                    WHERE s.dropped_xid OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id_if_assigned())
       AND NOT EXISTS (SELECT 1 FROM fencing.held_key) THEN
        RETURN;
    END IF;
    FOR cmd IN SELECT DISTINCT COALESCE(r.oid, c.objid) AS objid FROM pg_catalog.pg_event_trigger_ddl_commands() c LEFT JOIN pg_catalog.pg_class r ON c.command_tag OPERATOR(pg_catalog.=) 'ALTER SCHEMA' AND r.relnamespace OPERATOR(pg_catalog.=) c.objid AND r.relkind IN ('r', 'p')
               WHERE c.object_type OPERATOR(pg_catalog.=) 'table' OR r.oid IS NOT NULL
    LOOP
        PERFORM fencing.follow_held_key(cmd.objid);
        PERFORM fencing.adopt_dropped_state(cmd.objid);
    END LOOP;
    -- A view, materialized view or foreign table cannot take the state: one
    -- taking the name would let it vanish at COMMIT, and writes through a
    -- view over the copy go unfenced.
    FOR cmd IN SELECT DISTINCT c.objid, c.object_identity FROM pg_catalog.pg_event_trigger_ddl_commands() c
                 JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) c.objid
                 JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) r.relnamespace
                 JOIN fencing.dropped_state s
                   ON s.table_name OPERATOR(pg_catalog.=) pg_catalog.format('%I.%I', n.nspname, r.relname)
                  AND s.dropped_xid OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id_if_assigned()
                WHERE r.relkind IN ('v', 'm', 'f')
    LOOP
        RAISE EXCEPTION '% takes the name of a fenced table this transaction dropped, but cannot take its fencing state',
                cmd.object_identity
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'Only a table can take a dropped fenced table''s policy, tombstones and '
                           'high-water marks; they would be lost when the transaction ends, and '
                           'writes through a view over a copy would go unfenced.',
                  HINT = pg_catalog.format('Hand the state to the table that holds the rows first '
                         '(fencing_transfer_state(), before the DROP), or, to start afresh, '
                         'SELECT fencing_forget_dropped(%L) (logged in fencing.reset_log).',
                         cmd.object_identity);
    END LOOP;
END $$;
REVOKE ALL ON FUNCTION fencing.on_ddl_adopt_dropped() FROM PUBLIC;
-- Named to fire after auto-protection (fencing_ddl_command_end*); ALWAYS:
-- a restore in replica mode (pg_restore --clean) drops and re-creates too.
-- ALTER SCHEMA: a schema swap (DROP SCHEMA app CASCADE, ALTER SCHEMA
-- app_new RENAME TO app) moves every table of the schema into its name.
CREATE EVENT TRIGGER fencing_zz_adopt_dropped ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'CREATE SCHEMA',
                 'ALTER SCHEMA', 'CREATE VIEW', 'ALTER VIEW', 'CREATE MATERIALIZED VIEW',
                 'ALTER MATERIALIZED VIEW', 'CREATE FOREIGN TABLE', 'ALTER FOREIGN TABLE')
    EXECUTE FUNCTION fencing.on_ddl_adopt_dropped();
ALTER EVENT TRIGGER fencing_zz_adopt_dropped ENABLE ALWAYS;

-- DROP TYPE ... CASCADE of a typed table's type, and DROP ACCESS METHOD ...
-- CASCADE of a table access method, drop their tables too: each keeps its
-- state for a table that takes its name, as DROP TABLE does
-- (fencing_ddl_check_drop, re-created with the tags).
DROP EVENT TRIGGER fencing_ddl_check_drop;
CREATE EVENT TRIGGER fencing_ddl_check_drop ON ddl_command_start
    WHEN TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED', 'DROP TYPE', 'DROP ACCESS METHOD')
    EXECUTE FUNCTION fencing.ddl_check_start();
ALTER EVENT TRIGGER fencing_ddl_check_drop ENABLE ALWAYS;

CREATE VIEW @extschema@.fencing_dropped_state AS
    SELECT d.table_name, d.policy OPERATOR(pg_catalog.->>) 'scope' AS scope, d.policy,
           d.table_hwm::@extschema@.fencing_token AS table_hwm,
           (SELECT pg_catalog.count(*) FROM fencing.dropped_tombstone t
             WHERE t.table_name OPERATOR(pg_catalog.=) d.table_name) AS tombstones,
           d.owner, d.dropped_at
      FROM fencing.dropped_state d
     WHERE d.dropped_xid OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id_if_assigned();
GRANT SELECT ON @extschema@.fencing_dropped_state TO PUBLIC;
COMMENT ON VIEW @extschema@.fencing_dropped_state IS
    'fencing state of the fenced tables this transaction dropped, kept under their names for a table that takes the name before it ends';

CREATE FUNCTION @extschema@.fencing_forget_dropped(table_name pg_catalog.text)
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fencing_forget_dropped' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION @extschema@.fencing_forget_dropped(pg_catalog.text) IS
    'discards the kept fencing state of a dropped table (its owner; logged in fencing.reset_log)';

-- == parallel restore of partitioned fenced tables ==
-- pg_restore -j runs each partition's ADD CONSTRAINT, each guard's CREATE
-- TRIGGER and the COPY of fencing.protected in parallel; each of them
-- re-installs the guards of the whole partition tree (every leaf and the
-- policy row), so two of them deadlocked. One lock per partition tree
-- (LockPolicyTree, src/pg/catalog/policy_store.hpp) orders them: taken at
-- ddl_command_start (fencing.on_guard_ddl) before the command locks a table,
-- and here before a policy row is inserted.
CREATE FUNCTION fencing.protected_lock_tree() RETURNS trigger
    AS 'MODULE_PATHNAME', 'fencing_protected_lock_tree' LANGUAGE C;
REVOKE ALL ON FUNCTION fencing.protected_lock_tree() FROM PUBLIC;
CREATE TRIGGER protected_lock_tree BEFORE INSERT ON fencing.protected
    FOR EACH ROW EXECUTE FUNCTION fencing.protected_lock_tree();
ALTER TABLE fencing.protected ENABLE ALWAYS TRIGGER protected_lock_tree;

-- == partial restores come back fenced ==
-- A table restored with session_replication_role = replica (as
-- docs/operations.md advises for data) fired no ddl_command_end event
-- trigger, so a table with a fencing_token column restored from a dump of
-- single tables (pg_dump -t, -n, -N fencing) came back with no policy and no
-- guard. Auto-protection now runs in replica mode too, as the guard's own
-- event triggers do; a whole-database restore still brings the dumped policy
-- (fencing.protected_upsert: the dumped row wins). fencing_verify_guards()
-- also reports tables with a fencing_token column and no policy.
ALTER EVENT TRIGGER fencing_ddl_command_end ENABLE ALWAYS;
ALTER EVENT TRIGGER fencing_ddl_command_end_more ENABLE ALWAYS;
COMMENT ON FUNCTION @extschema@.fencing_verify_guards(pg_catalog.bool) IS
    'protected tables whose guards are missing, disabled or stale, and tables with a fencing_token column but no policy; repair => true re-installs guards (table owner or superuser)';
-- == bulk ==
-- fencing_enable_retirement('jobs') with a quoted name and no cast resolves to
-- the namespace form: it now refuses (42P08) a name that is a fenced table's
-- and no claimed namespace's. This function names the namespace explicitly.
CREATE FUNCTION @extschema@.fencing_enable_namespace_retirement(namespace pg_catalog.text,
        idle pg_catalog.interval DEFAULT NULL)
    RETURNS void AS 'MODULE_PATHNAME', 'fencing_enable_namespace_retirement'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_enable_namespace_retirement(pg_catalog.text, pg_catalog.interval) IS
    'opt a namespace in to retirement (its owner), even when a table has the same name';
-- (bulk: end of section)

-- == restores without fencing's data fail closed ==
-- A dump of single tables (pg_dump -t, -n, -N fencing) carries each fenced
-- table's guard, whose arguments hold its policy, but none of fencing's data.
-- Restored, such a table takes the dumped guard's policy and its guards carry
-- a third argument, the restored-without-state mark: every write is refused
-- (TF004) until the state is restored (a dump's fencing.protected row arriving
-- lifts the mark: fencing.note_dumped_policy) or the owner accepts the loss
-- (fencing_reset_restored, logged). The mark lives in the triggers, so the
-- library fails closed under older extension SQL too (src/pg/guard/restore.hpp).
CREATE FUNCTION fencing.note_dumped_policy() RETURNS trigger
    AS 'MODULE_PATHNAME', 'fencing_note_dumped_policy' LANGUAGE C;
REVOKE ALL ON FUNCTION fencing.note_dumped_policy() FROM PUBLIC;
-- Before protected_upsert (triggers fire in name order).
CREATE TRIGGER protected_note_dumped BEFORE INSERT ON fencing.protected
    FOR EACH ROW EXECUTE FUNCTION fencing.note_dumped_policy();
ALTER TABLE fencing.protected ENABLE ALWAYS TRIGGER protected_note_dumped;
CREATE FUNCTION @extschema@.fencing_reset_restored(target pg_catalog.regclass)
    RETURNS pg_catalog.bool AS 'MODULE_PATHNAME', 'fencing_reset_restored' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION @extschema@.fencing_reset_restored(pg_catalog.regclass) IS
    'accepts that a table restored without its fencing state lost it: its writes are fenced again under its policy (owner only; logged in fencing.reset_log)';

-- == Citus: shard moves that would leave tombstones behind are refused ==
-- A logical shard move publishes the shard on its source worker (CREATE
-- PUBLICATION ... FOR TABLE <shard>); the shard's tombstones in
-- fencing.row_tombstone would stay behind. The publication of a shard of a
-- fenced row-scope table with tombstones is refused (0A000), so the move
-- fails and the shard stays (src/pg/ddl/citus_moves.hpp, docs/citus.md).
-- An event trigger rather than a hook: it loads the library in any session,
-- preloaded or not. ENABLE ALWAYS, as the other DDL checks.
CREATE EVENT TRIGGER fencing_publication_check ON ddl_command_start
    WHEN TAG IN ('CREATE PUBLICATION', 'ALTER PUBLICATION')
    EXECUTE FUNCTION fencing.ddl_check_start();
ALTER EVENT TRIGGER fencing_publication_check ENABLE ALWAYS;

-- == Citus: distributing a fenced table ==
-- The coordinator's table of a distributed or reference table is metadata:
-- its policy and guards go (Citus refuses a table with triggers), and each
-- worker protects the shards Citus creates in row scope (auto-protection),
-- also on later moves and splits. Refused (0A000) when state outside the
-- rows (tombstones, a floor, a table HWM) or a non-default policy would be
-- lost (src/pg/api/citus_distribute.cpp, docs/citus.md).
CREATE FUNCTION @extschema@.fencing_distribute(target pg_catalog.regclass,
        distribution_column pg_catalog.text DEFAULT NULL,
        colocate_with pg_catalog.text DEFAULT 'default')
    RETURNS void AS 'MODULE_PATHNAME', 'fencing_distribute' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_distribute(pg_catalog.regclass, pg_catalog.text, pg_catalog.text) IS
    'Citus: distributes a fenced table (a reference table without distribution_column); its shards are fenced in row scope on the workers (table owner)';
