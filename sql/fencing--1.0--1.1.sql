-- fencing 1.0 -> 1.1: hardening.
\echo Use "ALTER EXTENSION fencing UPDATE TO '1.1'" to load this file. \quit

-- Every object reference is schema-qualified (pg_catalog, @extschema@ or
-- fencing), so this script does not depend on the caller's search_path.

-- Row scope gains an internal AFTER UPDATE OF <primary key columns> trigger
-- (zz_fencing_move_recheck), the recheck of key moves: re-install the guards
-- of every protected table (fencing.protected_sync does it for each row).
UPDATE fencing.protected SET relid = relid;
