// The HWM tables as the direct paths (no planner, no executor) see them:
// whether each has the shape those paths assume, and opening one for a check.
// A table of any other shape takes the SPI paths, which plan by name.
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "access/skey.h"
#include "executor/tuptable.h"
#include "storage/lockdefs.h"
#include "utils/relcache.h"
}

namespace fencing::pg::hwm {

// One HWM table: what its CREATE TABLE says (name, key columns and types,
// HWM column), and the OIDs found for it, cached until a relcache
// invalidation of any of them (ForgetStoreTables).
struct DirectTable {
    const char *name;
    int nkeys;
    RegProcedure key_eq[2];
    Oid key_type[2];  // the primary key's columns are 1..nkeys, of these types
    AttrNumber hwm_attnum;
    Oid relid;
    Oid index;
    AttrNumber key_attnum[2];  // the primary key's columns, from its index
    // Read paths only: a hash index of this name on the key (LookupIndexOk)
    // is allowed besides the primary key, and reads go through it.
    const char *lookup_name = nullptr;
    Oid lookup = InvalidOid;
    // Read paths only (nothing is written directly): any other index may be
    // there too, which the SQL writes maintain (pg_repack --only-indexes and
    // REINDEX CONCURRENTLY build one next to each index they rebuild).
    bool read_only = false;
    // The column a raise stamps with its transaction's start (idle time for
    // retirement), when the table has it as a timestamptz; else 0.
    AttrNumber raised_at_attnum = 0;
};

extern DirectTable resource_direct;
extern DirectTable table_direct;
extern DirectTable tombstone_direct;

// The relation of this name in schema fencing; InvalidOid when there is none.
Oid StoreRelid(const char *name);

// A direct table opened for one check: the heap at once, its primary key
// index only when the row hint below does not do (OpenIndex). What the check
// needs of the DirectTable is copied: opening a relation accepts invalidation
// messages, which clear the DirectTable (ForgetDirectTables).
struct DirectAccess {
    LOCKMODE mode;
    int nkeys;
    AttrNumber hwm_attnum;
    AttrNumber raised_at_attnum;  // 0: none
    AttrNumber key_attnum[2];
    RegProcedure key_eq[2];
    const Datum *key;
    Oid index_relid;
    Oid lookup_relid;  // the table's lookup index, or InvalidOid
    Relation rel;
    Relation index;  // nullptr until OpenIndex (or OpenTombstoneIndex)
    ScanKeyData keys[2];
    int scan_nkeys;  // how many of keys the opened index's scan uses
};

// Opens (and locks, in mode) t's heap for a check of the row with key; false
// when t does not have the direct path's shape.
bool OpenDirectHeap(DirectTable *t, LOCKMODE mode, const Datum *key, DirectAccess *a);
// Opens the primary key index (once) and sets up the scan keys for a's key.
void OpenIndex(DirectAccess *a);
void CloseDirect(DirectAccess *a);

// Whether the row in slot carries a's key, exactly: the recheck of a hash
// index's candidates, and of a row found through a TID hint.
bool RowHasKey(const DirectAccess *a, TupleTableSlot *slot);

}  // namespace fencing::pg::hwm
