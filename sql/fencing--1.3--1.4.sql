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

----------------------------------------------------------------------------
-- Logical replication of the extension's state.
----------------------------------------------------------------------------

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
