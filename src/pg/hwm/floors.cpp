// Floors (pg/hwm/store.hpp): what a key with no entry of its own is judged
// against once retirement has folded idle entries into its namespace's or
// table's floor. Read through the floor table's primary key with the latest
// snapshot, after the key's own entry was found missing: a retirement deletes
// the entry and raises the floor in one transaction, so a reader that no
// longer sees the entry sees the raised floor.
#include "pg/hwm/store.hpp"

#include "pg/hwm/durability.hpp"
#include "pg/hwm/lock.hpp"
#include "pg/hwm/store_shape.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "storage/bufmgr.h"
}

namespace fencing::pg {
namespace {

// The floor row of key in the floor table name (schema fencing), read with
// the latest snapshot through its primary key; false when there is no such
// row, or no such table (the extension's SQL older than the library). No
// SQL runs and no permission is checked, as for a tombstone's direct read.
bool ReadFloor(const char *name, RegProcedure eq, Datum key, Token *floor) {
    Oid relid = hwm::StoreRelid(name);
    if (!OidIsValid(relid))
        return false;
    Relation rel = table_open(relid, AccessShareLock);
    // A floor table that never held a row (no retirement opted in) has no
    // block: no index scan for every write of a new key. A committed floor
    // row has extended the relation before it could be seen.
    if (RelationGetNumberOfBlocks(rel) == 0) {
        table_close(rel, NoLock);
        return false;
    }
    AttrNumber floor_attnum = get_attnum(relid, "floor");
    Oid index_relid = PrimaryKeyIndex(rel);
    bool found = false;
    if (OidIsValid(index_relid) && floor_attnum != InvalidAttrNumber &&
        TupleDescAttr(RelationGetDescr(rel), floor_attnum - 1)->atttypid == INT8OID) {
        Relation index = index_open(index_relid, AccessShareLock);
        ScanKeyData skey;
        ScanKeyEntryInitialize(&skey, 0, 1, BTEqualStrategyNumber, InvalidOid,
                               index->rd_indcollation[0], eq, key);
        Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
        TupleTableSlot *slot = table_slot_create(rel, nullptr);
        IndexScanDesc scan = BeginIndexScan(rel, index, snapshot, 1, 0);
        index_rescan(scan, &skey, 1, nullptr, 0);
        found = index_getnext_slot(scan, ForwardScanDirection, slot);
        if (found) {
            bool isnull;
            Datum d = slot_getattr(slot, floor_attnum, &isnull);
            *floor = isnull ? 0 : DatumGetInt64(d);
        }
        index_endscan(scan);
        ExecDropSingleTupleTableSlot(slot);
        UnregisterSnapshot(snapshot);
        index_close(index, NoLock);
    }
    table_close(rel, NoLock);
    return found;
}

}  // namespace

Token ResourceFloor(const char *name_space) {
    Token floor = 0;
    if (!ReadFloor("resource_floor", F_TEXTEQ, CStringGetTextDatum(name_space), &floor))
        return 0;
    return floor;
}

// The last table floor this transaction read. From the second read of one
// table's floor in a transaction on (a statement writing many rows: COPY,
// INSERT ... SELECT), the floor lock (pg/hwm/lock.hpp) is taken in share mode
// before the read, if granted at once, and the value kept while the lock
// stays held: no retirement of the table can commit before this transaction
// ends, and its own retirements forget it (ForgetTombstoneFloor). A
// transaction that reads a floor once takes no lock: retirement never waits
// for single-row writers.
struct KeptFloor {
    Oid relid = InvalidOid;
    uint64 lock_epoch = 0;  // LockEpoch() at the read: same transaction, lock held
    Token floor = 0;
    bool kept = false;
};
KeptFloor kept_floor;

Token TombstoneFloor(Oid home_relid) {
    bool again = kept_floor.relid == home_relid && kept_floor.lock_epoch == LockEpoch();
    if (again && kept_floor.kept)
        return kept_floor.floor;
    // Taken before the read: a retirement that committed before it was
    // granted is seen, and none commits after. Not granted (a retirement
    // holds or waits for it): read, not kept.
    bool keep = again && ConditionalLockTombstoneFloorShared(home_relid);
    Token floor = 0;
    if (!ReadFloor("tombstone_floor", F_OIDEQ, ObjectIdGetDatum(home_relid), &floor))
        floor = 0;
    kept_floor = {home_relid, LockEpoch(), floor, keep};
    return floor;
}

void LockFloorForRetirement(Oid home_relid, bool nowait) {
    if (!LockTombstoneFloorExclusive(home_relid, nowait))
        ereport(ERROR, (errcode(ERRCODE_LOCK_NOT_AVAILABLE),
                        errmsg("could not lock the tombstone floor of table %s for retirement",
                               get_rel_name(home_relid) != nullptr ? get_rel_name(home_relid)
                                                                   : "(dropped)"),
                        errdetail("A transaction that keeps the floor it read is still running.")));
}

void ForgetTombstoneFloor() {
    kept_floor.relid = InvalidOid;
}

bool KeepsTombstoneFloor() {
    return OidIsValid(kept_floor.relid) && kept_floor.kept;
}

void HoldTombstoneFloorForRaise(Oid home_relid) {
    LockTombstoneFloorExclusive(home_relid, false);
    ForgetTombstoneFloor();
}

bool StoreHasRaisedAt(const char *table) {
    Oid relid = hwm::StoreRelid(table);
    if (!OidIsValid(relid))
        return false;
    AttrNumber attnum = get_attnum(relid, "raised_at");
    return attnum != InvalidAttrNumber && get_atttype(relid, attnum) == TIMESTAMPTZOID;
}

}  // namespace fencing::pg
