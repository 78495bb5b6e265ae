-- Attack on INSERT ... ON CONFLICT DO SELECT (PostgreSQL 19): for fencing it
-- must behave as DO NOTHING does. Every scope (row, resource, table, a
-- partitioned row-scope table, strict mode), every way of passing the token
-- (the token column, SET LOCAL fencing.token with the column omitted, both,
-- none), tokens below, at and above every HWM, on a live key (a conflict), a
-- tombstoned key and a new key; DO SELECT with and without FOR UPDATE /
-- FOR SHARE. Each case runs in a subtransaction that is rolled back, from the
-- same state, and its outcome (SQLSTATE, the table's rows, the HWMs) is
-- compared with the same INSERT under DO NOTHING.
\set VERBOSITY terse
SET client_min_messages = warning;

CREATE TABLE ds_row (id int PRIMARY KEY, shard text, v text, fence fencing_token);
CREATE TABLE ds_strict (id int PRIMARY KEY, shard text, v text, fence fencing_token);
SELECT fencing_protect('ds_strict', strict => true) IS NOT NULL AS strict_protected;
CREATE TABLE ds_res (id int PRIMARY KEY, shard text, v text, fence fencing_token);
SELECT fencing_protect('ds_res', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'ds_shards') IS NOT NULL AS res_protected;
CREATE TABLE ds_tab (id int PRIMARY KEY, shard text, v text, fence fencing_token);
SELECT fencing_protect('ds_tab', scope => 'table') IS NOT NULL AS tab_protected;
CREATE TABLE ds_part (id int PRIMARY KEY, shard text, v text, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE ds_part_a PARTITION OF ds_part FOR VALUES FROM (0) TO (2);
CREATE TABLE ds_part_b PARTITION OF ds_part FOR VALUES FROM (2) TO (100);

-- Each table: key 1 live at 10, key 2 deleted at 20 (a tombstone in row
-- scope; the HWM 20 in resource and table scope).
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['ds_row', 'ds_strict', 'ds_res', 'ds_tab', 'ds_part'] LOOP
        EXECUTE format('INSERT INTO %I VALUES (1, %L, %L, 10), (2, %L, %L, 15)', t, 's1', 'holder', 's1', 'gone');
        PERFORM set_config('fencing.token', '20', true);
        EXECUTE format('DELETE FROM %I WHERE id = 2', t);
        PERFORM set_config('fencing.token', '', true);
    END LOOP;
END $$;

-- The state a case is judged by: the rows and every HWM it could move.
CREATE FUNCTION ds_state(tbl regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE rows_ text; h text;
BEGIN
    EXECUTE format('SELECT string_agg(t::text, %L ORDER BY t.id) FROM %s t', ' ', tbl) INTO rows_;
    IF tbl IN ('ds_res'::regclass, 'ds_tab'::regclass) THEN
        h := coalesce(fencing_high_water(tbl, '{"shard": "s1"}')::text, '-');
    ELSE
        SELECT string_agg(coalesce(fencing_high_water(tbl, jsonb_build_object('id', k))::text, '-'), '/' ORDER BY k)
          INTO h FROM generate_series(1, 3) k;
    END IF;
    RETURN rows_ || ' hwm ' || h;
END $$;

-- One case in a subtransaction rolled back: 'SQLSTATE | state after'.
CREATE FUNCTION ds_try(tbl regclass, stmt text, tok text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text := 'ok'; after text;
BEGIN
    BEGIN
        IF tok IS NOT NULL THEN
            PERFORM set_config('fencing.token', tok, true);
        END IF;
        EXECUTE stmt;
        after := ds_state(tbl);
        RAISE EXCEPTION 'ds_rollback';
    EXCEPTION WHEN OTHERS THEN
        IF SQLERRM <> 'ds_rollback' THEN
            st := SQLSTATE;
            after := NULL;
        END IF;
    END;
    RETURN st || ' | ' || coalesce(after, '(rolled back)');
END $$;

CREATE TEMP TABLE ds_case AS
SELECT tbl, key, tok, mode,
       CASE mode
           WHEN 'column' THEN format('INSERT INTO %s VALUES (%s, %L, %L, %s)', tbl, key, 's1', 'new', tok)
           WHEN 'setting' THEN format('INSERT INTO %s (id, shard, v) VALUES (%s, %L, %L)', tbl, key, 's1', 'new')
           WHEN 'both' THEN format('INSERT INTO %s VALUES (%s, %L, %L, %s)', tbl, key, 's1', 'new', tok)
           WHEN 'none' THEN format('INSERT INTO %s (id, shard, v) VALUES (%s, %L, %L)', tbl, key, 's1', 'new')
       END AS ins,
       CASE WHEN mode IN ('setting', 'both') THEN tok::text END AS setting
  FROM unnest(ARRAY['ds_row', 'ds_strict', 'ds_res', 'ds_tab', 'ds_part']::regclass[]) tbl,
       generate_series(1, 3) key,
       unnest(ARRAY[5, 10, 15, 20, 25]) tok,
       unnest(ARRAY['column', 'setting', 'both', 'none']) mode;

CREATE TEMP TABLE ds_result AS
SELECT c.tbl, c.key, c.tok, c.mode, v.variant,
       ds_try(c.tbl, c.ins || ' ON CONFLICT (id) DO NOTHING', c.setting) AS do_nothing,
       ds_try(c.tbl, c.ins || ' ON CONFLICT (id) ' || v.clause, c.setting) AS do_select
  FROM ds_case c,
       (VALUES ('DO SELECT RETURNING', 'DO SELECT RETURNING id'),
               ('DO SELECT FOR UPDATE RETURNING', 'DO SELECT FOR UPDATE RETURNING *'),
               ('DO SELECT FOR SHARE RETURNING', 'DO SELECT FOR SHARE RETURNING fence'),
               ('DO NOTHING RETURNING', 'DO NOTHING RETURNING *')) v(variant, clause);

SELECT count(*) AS cases, count(DISTINCT (tbl, key, tok, mode)) AS inserts,
       count(*) FILTER (WHERE do_nothing LIKE 'ok%') AS admitted,
       count(*) FILTER (WHERE do_nothing LIKE 'TF%') AS refused
  FROM ds_result;
-- The holes: a case where DO SELECT does not do what DO NOTHING does.
SELECT tbl, key, tok, mode, variant, do_nothing, do_select
  FROM ds_result WHERE do_nothing IS DISTINCT FROM do_select
 ORDER BY tbl::text, key, tok, mode, variant;
-- What DO NOTHING does, per table and key (the reference).
SELECT tbl, key, mode, string_agg(tok || ': ' || split_part(do_nothing, ' | ', 1), ', ' ORDER BY tok) AS outcomes
  FROM ds_result WHERE variant = 'DO SELECT RETURNING'
 GROUP BY tbl, key, mode ORDER BY tbl::text, key, mode;
-- Nothing moved outside the subtransactions.
SELECT tbl, ds_state(tbl) FROM unnest(ARRAY['ds_row', 'ds_strict', 'ds_res', 'ds_tab', 'ds_part']::regclass[]) tbl ORDER BY 1::text;
DROP TABLE ds_row, ds_strict, ds_res, ds_tab, ds_part;
DROP FUNCTION ds_try(regclass, text, text), ds_state(regclass);
