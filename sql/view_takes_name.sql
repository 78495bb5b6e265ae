-- A fenced table dropped and its name taken by a view over the copy (the
-- table renamed, a view keeping the old name: pgroll's versioned views, an
-- expand/contract step). No table takes the name, so the kept state would
-- vanish at COMMIT and a stale INSERT through the view be accepted by the
-- copy: the CREATE VIEW is refused (55000). fence_held is true when the
-- state followed the copy or the step was refused.
\set VERBOSITY terse
SET client_min_messages = error;
\ir test/lib/sql_try.sql
\ir test/lib/carry_helpers.sql

CREATE TABLE vt (id int PRIMARY KEY, v text, tok fencing_token);
INSERT INTO vt VALUES (1, 'one', 10), (2, 'two', 20);
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM vt WHERE id = 1; COMMIT;

BEGIN;
SELECT pg_temp.copy_then('vt', 'vt_data', 'DROP TABLE vt; CREATE VIEW vt AS SELECT * FROM vt_data') AS swap;
COMMIT;
SELECT pg_temp.fence_held('vt');
DROP TABLE IF EXISTS vt, vt_data;
