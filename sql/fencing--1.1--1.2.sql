-- fencing 1.1 -> 1.2.
\echo Use "ALTER EXTENSION fencing UPDATE TO '1.2'" to load this file. \quit

-- Every object reference is schema-qualified (pg_catalog or fencing), so this
-- script does not depend on the caller's search_path.

----------------------------------------------------------------------------
-- Install-time security (issue 8): the SECURITY DEFINER functions.
--
-- The extension has three, all event-trigger functions written in PL/pgSQL:
--   fencing.on_ddl_command_end()   (1.0, replaced in 1.1)
--   fencing.on_sql_drop()          (1.0)
--   fencing.on_sql_drop_cascade()  (1.1)
-- Why SECURITY DEFINER: they run inside every role's DDL (CREATE/ALTER/DROP
-- TABLE, DROP SCHEMA, DROP OWNED, ...) and must read and write the
-- extension's own tables (fencing.protected, fencing.table_hwm,
-- fencing.row_tombstone) and call fencing.on_table_ddl(), none of which an
-- ordinary role may touch (schema fencing is revoked from PUBLIC). They take
-- no argument: what they act on comes from pg_event_trigger_ddl_commands()
-- and pg_event_trigger_dropped_objects(), which PostgreSQL fills in, and they
-- run no SQL built from a name. A function returning event_trigger cannot
-- be called directly (0A000), only by the event triggers the extension owns.
-- search_path: pinned since 1.0 to "pg_catalog, pg_temp" (pg_temp last, so a
-- temporary object can shadow nothing); set again here so that this script
-- states it.
-- EXECUTE: nobody needs to call them (event triggers invoke their function
-- without an EXECUTE check), so PUBLIC loses the default EXECUTE grant.
----------------------------------------------------------------------------
ALTER FUNCTION fencing.on_ddl_command_end() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION fencing.on_sql_drop() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION fencing.on_sql_drop_cascade() SET search_path = pg_catalog, pg_temp;
REVOKE ALL ON FUNCTION fencing.on_ddl_command_end() FROM PUBLIC;
REVOKE ALL ON FUNCTION fencing.on_sql_drop() FROM PUBLIC;
REVOKE ALL ON FUNCTION fencing.on_sql_drop_cascade() FROM PUBLIC;

-- The other functions of schema fencing are not SECURITY DEFINER. The C
-- trigger and event-trigger functions refuse any call that is not a trigger
-- call (39P01); fencing.protected_upsert() is PL/pgSQL (0A000). They keep
-- PUBLIC's EXECUTE: PostgreSQL checks it when a trigger is created on them,
-- and the extension's guards are created by whoever protects a table (the
-- table owner) through the C code. fencing.guard_status() keeps it too: the
-- fencing_protected view calls it as the querying role. Schema fencing is
-- not usable by PUBLIC, so none of them can be named by an ordinary role.
-- fencing.on_table_ddl() and fencing.ddl_check_start() had EXECUTE revoked
-- from PUBLIC in 1.0 and 1.1.
