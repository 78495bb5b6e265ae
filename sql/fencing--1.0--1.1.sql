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

-- The policy view filters rows by privilege: no caller-supplied function may
-- see the rows it filters out.
ALTER VIEW @extschema@.fencing_protected SET (security_barrier = true);
