-- fencing 1.5 -> 1.6
\echo Use "ALTER EXTENSION fencing UPDATE TO '1.6'" to load this file. \quit

-- Each section below belongs to one change; sections are appended, never
-- interleaved, so that independent changes merge cleanly.

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
