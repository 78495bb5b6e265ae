-- fencing 1.2 -> 1.3
\echo Use "ALTER EXTENSION fencing UPDATE TO '1.3'" to load this file. \quit

----------------------------------------------------------------------------
-- The HWM stores compare their text keys bytewise.
--
-- Every fenced write in resource scope probes fencing.resource_hwm's primary
-- key, and every row-scope INSERT and DELETE probes fencing.row_tombstone's.
-- Under the database's collation each comparison of that probe went through
-- the collation (strcoll for anything but C), at every level of the B-tree:
-- the per-write cost grew with the number of HWMs. The keys are identifiers
-- (namespace and resource names, the hex of a deleted row's key columns);
-- only equality matters, and "C" equality is byte equality, as it already was
-- under every deterministic collation. So: COLLATE "C". Same type, no table
-- rewrite; the primary keys are rebuilt. The values do not change, so dumps
-- of either version restore into the other.
----------------------------------------------------------------------------
ALTER TABLE fencing.resource_hwm
    ALTER COLUMN namespace TYPE pg_catalog.text COLLATE pg_catalog."C",
    ALTER COLUMN resource TYPE pg_catalog.text COLLATE pg_catalog."C";
ALTER TABLE fencing.row_tombstone
    ALTER COLUMN key TYPE pg_catalog.text[] COLLATE pg_catalog."C";

----------------------------------------------------------------------------
-- Tombstone lookups through a hash index.
--
-- Every row-scope INSERT reads its key's tombstone (the guard's lookup, and
-- the recheck after in-flight writers). Through the primary key that is a
-- B-tree descent whose text[] comparisons grow with the number of
-- tombstones. A hash index on the key with the relid appended (so that
-- tables with the same key values do not share a hash value) costs the same
-- at any size; the library uses it when it exists (by this name, hash access
-- method) and rechecks every row it returns. Tombstones are written through
-- SQL, which maintains both indexes. Created by the update, so not dumped.
----------------------------------------------------------------------------
CREATE INDEX row_tombstone_lookup ON fencing.row_tombstone USING hash
    ((pg_catalog.array_append(key, relid::pg_catalog.oid::pg_catalog.text)));
