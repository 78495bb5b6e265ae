-- fencing_verify_guards() reports a table whose token column fences nothing:
-- a policy whose column is gone or is no token column any more (DDL run with
-- the extension's event triggers off), and a table that declares a
-- fencing_token column but has no policy (a partial restore without
-- fencing's data).
\set VERBOSITY default
SET client_min_messages = warning;
CREATE TABLE vu_gone (id int PRIMARY KEY, v int, tok bigint);
SELECT fencing_protect('vu_gone', token_column => 'tok');
CREATE TABLE vu_text (id int PRIMARY KEY, v int, tok bigint);
SELECT fencing_protect('vu_text', token_column => 'tok');
ALTER EVENT TRIGGER fencing_ddl_command_end DISABLE;
ALTER TABLE vu_gone DROP COLUMN tok;
ALTER TABLE vu_text DROP COLUMN tok;
ALTER TABLE vu_text ADD COLUMN tok text;
ALTER EVENT TRIGGER fencing_ddl_command_end ENABLE ALWAYS;
CREATE TABLE vu_bare (id int PRIMARY KEY, v int, tok fencing_token);
SELECT fencing_unprotect('vu_bare');
SELECT * FROM fencing_verify_guards() WHERE table_name::text LIKE 'vu\_%' ORDER BY 1;
-- Repair cannot make up a policy for them.
SELECT table_name, repaired FROM fencing_verify_guards(true)
 WHERE table_name::text LIKE 'vu\_%' ORDER BY 1;
SELECT fencing_unprotect('vu_gone');
SELECT fencing_unprotect('vu_text');
DROP TABLE vu_gone, vu_text, vu_bare;
