// Row scope's tombstones: the HWM a deleted row leaves under its primary key,
// so a stale writer cannot bring the key back. Read and raised through the HWM
// store (pg/hwm_store.hpp), keyed canonically (pg/tombstone_key.hpp).
#include "pg/tombstones.hpp"

#include "pg/hwm_store.hpp"
#include "pg/internal_access.hpp"
#include "pg/row_key.hpp"
#include "pg/tombstone_key.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_inherits.h"
#include "executor/tuptable.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

namespace fencing::pg {

bool RowTombstone(Relation rel, Oid home_relid, HeapTuple new_row, Token *hwm) {
    RequireCanonicalRowKeyCached(rel);
    Datum key;
    if (!RowKeyOf(rel, new_row, &key))
        return false;
    return ReadTombstone(home_relid, key, hwm);
}

void WaitForKeyWritersOf(Relation rel, const Datum *values) {
    // A partitioned table (fencing_advance() names the root) has no storage,
    // nor has its primary key, a partitioned index: scanning it crashed the
    // backend. The key's row is in one of the leaf partitions, whose primary
    // keys have the root's columns in the root's order: wait on each.
    if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE) {
        List *parts = find_all_inheritors(RelationGetRelid(rel), AccessShareLock, nullptr);
        ListCell *lc;
        foreach (lc, parts) {
            Oid part = lfirst_oid(lc);
            if (get_rel_relkind(part) != RELKIND_RELATION)
                continue;  // the root, sub-partitioned tables, foreign tables
            Relation leaf = table_open(part, NoLock);  // locked by find_all_inheritors
            WaitForKeyWritersOf(leaf, values);
            table_close(leaf, NoLock);
        }
        return;
    }
    PrimaryKey pk;
    if (!GetPrimaryKey(rel, &pk))
        return;
    Relation index = index_open(RelationGetPrimaryKeyIndex(rel), AccessShareLock);
    ScanKeyData keys[INDEX_MAX_KEYS];
    for (int i = 0; i < pk.natts; ++i) {
        Oid opfamily = index->rd_opfamily[i];
        Oid type = index->rd_opcintype[i];
        Oid eqop = get_opfamily_member(opfamily, type, type, BTEqualStrategyNumber);
        ScanKeyEntryInitialize(&keys[i], 0, i + 1, BTEqualStrategyNumber, InvalidOid,
                               index->rd_indcollation[i], get_opcode(eqop), values[i]);
    }
    WaitForIndexWriters(rel, index, keys, pk.natts);
    index_close(index, AccessShareLock);
}

void WaitForKeyWriters(Relation rel, HeapTuple new_row) {
    RequireCanonicalRowKeyCached(rel);
    PrimaryKey pk;
    if (!GetPrimaryKey(rel, &pk))
        return;
    TupleDesc desc = RelationGetDescr(rel);
    Datum values[INDEX_MAX_KEYS];
    for (int i = 0; i < pk.natts; ++i) {
        bool isnull;
        values[i] = heap_getattr(new_row, pk.attnums[i], desc, &isnull);
        if (isnull)
            return;
    }
    WaitForKeyWritersOf(rel, values);
}

bool RowTombstoneAfterWriters(Relation rel, Oid home_relid, HeapTuple row, Token *hwm) {
    RequireCanonicalRowKeyCached(rel);
    Datum key;
    if (!RowKeyOf(rel, row, &key))
        return false;
    return TombstoneAfterWriters(home_relid, key, hwm);
}

void LeaveTombstone(Relation rel, Oid home_relid, HeapTuple old_row, Token hwm) {
    RequireCanonicalRowKeyCached(rel);
    Datum key;
    if (!RowKeyOf(rel, old_row, &key))
        return;
    InternalSession access;
    BeginInternal(&access);
    RaiseTombstone(home_relid, key, hwm);
    EndInternal(&access);
}

int64 TombstoneEveryRow(Relation rel, Oid home_relid, AttrNumber token_attnum) {
    RequireCanonicalRowKeyCached(rel);
    PrimaryKey pk;
    if (!GetPrimaryKey(rel, &pk))
        return 0;
    Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
    TableScanDesc scan = table_beginscan(rel, snapshot, 0, nullptr);
    TupleTableSlot *slot = table_slot_create(rel, nullptr);
    MemoryContext per_row =
        AllocSetContextCreate(CurrentMemoryContext, "fencing tombstones", ALLOCSET_DEFAULT_SIZES);
    // One internal session for all rows: opening one per row (LeaveTombstone)
    // costs more than the raise itself.
    InternalSession access;
    BeginInternal(&access);
    int64 written = 0;
    while (table_scan_getnextslot(scan, ForwardScanDirection, slot)) {
        bool isnull;
        Datum token = slot_getattr(slot, token_attnum, &isnull);
        if (isnull)
            continue;
        MemoryContext caller = MemoryContextSwitchTo(per_row);
        bool should_free;
        HeapTuple row = ExecFetchSlotHeapTuple(slot, false, &should_free);
        Datum key;
        if (RowKeyOf(rel, row, &key)) {
            RaiseTombstone(home_relid, key, DatumGetInt64(token));
            ++written;
        }
        MemoryContextSwitchTo(caller);
        MemoryContextReset(per_row);
    }
    EndInternal(&access);
    ExecDropSingleTupleTableSlot(slot);
    table_endscan(scan);
    UnregisterSnapshot(snapshot);
    MemoryContextDelete(per_row);
    return written;
}

}  // namespace fencing::pg
