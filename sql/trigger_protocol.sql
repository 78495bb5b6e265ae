-- The extension's trigger functions refuse any firing other than the one the
-- extension installs (defect M10: fencing.recheck() attached FOR EACH
-- STATEMENT dereferenced a NULL tuple and crashed the server). Attaching them
-- by hand needs the superuser; each wrong firing ends in SQLSTATE 39P01.
\set VERBOSITY default
SET client_min_messages = notice;

-- The guard-integrity event trigger drops fencing triggers created on tables
-- without a policy (a dump's); switched off here so the functions' own
-- checks, the last line of defence, are what is tested.
ALTER EVENT TRIGGER fencing_guard_ddl_end DISABLE;
CREATE TABLE tp (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_unprotect('tp');
INSERT INTO fencing.row_tombstone VALUES ('tp'::regclass, ARRAY['00000007'], 100);
INSERT INTO tp VALUES (8, 1);
CREATE VIEW tp_view AS SELECT * FROM tp;

-- Attaches fencing.<fn>(<args>) to rel as "<firing> ... FOR EACH <level>", runs dml, drops
-- the trigger; returns 'ok' or the error's SQLSTATE and message. $policy in
-- args is the policy text a row-scope guard of tp carries.
CREATE FUNCTION probe(firing text, level text, fn text, args text, rel text, dml text)
    RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    policy text := quote_literal(format('v1 %s 2 row error 0 0 0', 'tp'::regclass::oid));
    result text := 'ok';
BEGIN
    EXECUTE format('CREATE TRIGGER probe %s ON %s FOR EACH %s EXECUTE FUNCTION fencing.%s(%s)',
                   firing, rel, level, fn, replace(args, '$policy', policy));
    BEGIN
        EXECUTE dml;
    EXCEPTION WHEN OTHERS THEN
        result := SQLSTATE || ': ' || SQLERRM;
    END;
    EXECUTE format('DROP TRIGGER probe ON %s', rel);
    RETURN result;
END $f$;

SELECT fn, firing, level, args, probe(firing, level, fn, args, rel, dml)
  FROM (VALUES
    -- fencing.recheck(): AFTER ROW, on INSERT or UPDATE, two arguments.
    ('recheck', 'AFTER INSERT', 'STATEMENT', '$policy, ''''', 'tp',
     'INSERT INTO tp VALUES (7, 1)'),
    ('recheck', 'AFTER UPDATE', 'STATEMENT', '$policy, ''''', 'tp',
     'UPDATE tp SET id = 7'),
    ('recheck', 'BEFORE INSERT', 'ROW', '$policy, ''''', 'tp',
     'INSERT INTO tp VALUES (7, 1)'),
    ('recheck', 'AFTER DELETE', 'ROW', '$policy, ''''', 'tp', 'DELETE FROM tp'),
    ('recheck', 'INSTEAD OF INSERT', 'ROW', '$policy, ''''', 'tp_view',
     'INSERT INTO tp_view VALUES (9, 1)'),
    ('recheck', 'AFTER INSERT', 'ROW', '$policy', 'tp', 'INSERT INTO tp VALUES (7, 1)'),
    -- A policy naming a column the table does not have is refused, not misread.
    ('recheck', 'AFTER INSERT', 'ROW', '''v1 1 9 row error 0 0 0'', ''''', 'tp',
     'INSERT INTO tp VALUES (7, 1)'),
    -- Fired as installed, it judges the row: key 7's tombstone is 100.
    ('recheck', 'AFTER INSERT', 'ROW', '$policy, ''''', 'tp',
     'INSERT INTO tp VALUES (7, 1)'),
    -- fencing.guard(): BEFORE ROW, on INSERT, UPDATE or DELETE, two arguments.
    ('guard', 'BEFORE INSERT', 'STATEMENT', '$policy, ''''', 'tp',
     'INSERT INTO tp VALUES (10, 1)'),
    ('guard', 'BEFORE TRUNCATE', 'STATEMENT', '$policy, ''''', 'tp', 'TRUNCATE tp'),
    ('guard', 'AFTER INSERT', 'ROW', '$policy, ''''', 'tp',
     'INSERT INTO tp VALUES (10, 1)'),
    ('guard', 'BEFORE INSERT', 'ROW', '', 'tp', 'INSERT INTO tp VALUES (10, 1)'),
    -- Fired as installed, it judges the row: key 7's tombstone is 100.
    ('guard', 'BEFORE INSERT', 'ROW', '$policy, ''''', 'tp',
     'INSERT INTO tp VALUES (7, 2)')
  ) AS p(fn, firing, level, args, rel, dml);

-- Nothing was written.
SELECT * FROM tp ORDER BY id;
DROP VIEW tp_view;
DROP TABLE tp;
DROP FUNCTION probe(text, text, text, text, text, text);
ALTER EVENT TRIGGER fencing_guard_ddl_end ENABLE ALWAYS;
