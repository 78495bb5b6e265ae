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
#include "catalog/pg_type.h"
#include "catalog/pg_inherits.h"
#include "executor/tuptable.h"
#include "storage/lmgr.h"
#include "utils/array.h"
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

namespace {

// Keys and HWMs gathered for one RaiseTombstones statement.
constexpr int kTombstoneBatch = 1000;
struct TombstoneBatch {
    MemoryContext cxt;  // the elements; reset after each flush
    int n, nelems, capacity;
    Datum *elements;
    Datum starts[kTombstoneBatch], counts[kTombstoneBatch], hwms[kTombstoneBatch];
};

void AddToBatch(TombstoneBatch *b, Datum key, Token hwm) {
    ArrayType *arr = DatumGetArrayTypeP(key);
    Datum *elems;
    int nelems;
    deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, nullptr, &nelems);
    if (b->nelems + nelems > b->capacity) {
        b->capacity = Max(b->capacity * 2, b->nelems + nelems);
        b->elements = static_cast<Datum *>(repalloc(b->elements, sizeof(Datum) * b->capacity));
    }
    b->starts[b->n] = Int32GetDatum(b->nelems + 1);
    b->counts[b->n] = Int32GetDatum(nelems);
    b->hwms[b->n] = Int64GetDatum(hwm);
    for (int i = 0; i < nelems; ++i) b->elements[b->nelems++] = elems[i];
    ++b->n;
}

void FlushBatch(TombstoneBatch *b, Oid home_relid) {
    if (b->n == 0)
        return;
    MemoryContext caller = MemoryContextSwitchTo(b->cxt);
    Datum elements =
        PointerGetDatum(construct_array(b->elements, b->nelems, TEXTOID, -1, false, TYPALIGN_INT));
    Datum starts =
        PointerGetDatum(construct_array(b->starts, b->n, INT4OID, 4, true, TYPALIGN_INT));
    Datum counts =
        PointerGetDatum(construct_array(b->counts, b->n, INT4OID, 4, true, TYPALIGN_INT));
    Datum hwms = PointerGetDatum(
        construct_array(b->hwms, b->n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
    MemoryContextSwitchTo(caller);
    RaiseTombstones(home_relid, b->n, elements, starts, counts, hwms);
    b->n = 0;
    b->nelems = 0;
    // The elements array lives in the caller's context; the keys' copies here.
    MemoryContextReset(b->cxt);
}

}  // namespace

int64 TombstoneEveryRow(Relation rel, Oid home_relid, AttrNumber token_attnum) {
    RequireCanonicalRowKeyCached(rel);
    PrimaryKey pk;
    if (!GetPrimaryKey(rel, &pk))
        return 0;
    Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
    TableScanDesc scan = table_beginscan(rel, snapshot, 0, nullptr);
    TupleTableSlot *slot = table_slot_create(rel, nullptr);
    TombstoneBatch *batch = static_cast<TombstoneBatch *>(palloc0(sizeof(TombstoneBatch)));
    batch->cxt =
        AllocSetContextCreate(CurrentMemoryContext, "fencing tombstones", ALLOCSET_DEFAULT_SIZES);
    batch->capacity = kTombstoneBatch * pk.natts;
    batch->elements = static_cast<Datum *>(palloc(sizeof(Datum) * batch->capacity));
    // One internal session, and one statement per batch of keys: a session
    // or a statement per row costs more than the raise itself.
    InternalSession access;
    BeginInternal(&access);
    int64 written = 0;
    while (table_scan_getnextslot(scan, ForwardScanDirection, slot)) {
        bool isnull;
        Datum token = slot_getattr(slot, token_attnum, &isnull);
        if (isnull)
            continue;
        MemoryContext caller = MemoryContextSwitchTo(batch->cxt);
        bool should_free;
        HeapTuple row = ExecFetchSlotHeapTuple(slot, false, &should_free);
        Datum key;
        bool keyed = RowKeyOf(rel, row, &key);
        if (keyed)
            AddToBatch(batch, key, DatumGetInt64(token));
        MemoryContextSwitchTo(caller);
        if (keyed)
            ++written;
        if (batch->n == kTombstoneBatch)
            FlushBatch(batch, home_relid);
    }
    FlushBatch(batch, home_relid);
    EndInternal(&access);
    ExecDropSingleTupleTableSlot(slot);
    table_endscan(scan);
    UnregisterSnapshot(snapshot);
    MemoryContextDelete(batch->cxt);
    return written;
}

}  // namespace fencing::pg
