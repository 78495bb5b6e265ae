// Row scope's tombstones: the HWM a deleted row leaves under its primary key,
// so a stale writer cannot bring the key back. Read and raised through the HWM
// store (pg/hwm/store.hpp), keyed canonically (pg/keys/tombstone_key.hpp).
#include "pg/hwm/tombstones.hpp"

#include "pg/catalog/citus_node.hpp"

#include "pg/hwm/removed_rows.hpp"
#include "pg/hwm/store.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/keys/row_key.hpp"
#include "pg/keys/tombstone_key.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/genam.h"
#include "access/nbtree.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_inherits.h"
#include "commands/defrem.h"
#include "common/hashfn.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

namespace fencing::pg {
namespace {

// A scan of every row of rel with the latest snapshot, and a memory context
// for the work on one row, reset before the next.
struct LatestRowScan {
    Snapshot snapshot;
    TableScanDesc scan;
    TupleTableSlot *slot;
    MemoryContext per_row;
};

void BeginLatestRowScan(LatestRowScan *rows, Relation rel, const char *context_name) {
    rows->snapshot = RegisterSnapshot(GetLatestSnapshot());
    rows->scan = BeginTableScan(rel, rows->snapshot);
    rows->slot = table_slot_create(rel, nullptr);
    // context_name is a string literal of the caller's (the macro form
    // checks that only for a literal in place).
    rows->per_row =
        AllocSetContextCreateInternal(CurrentMemoryContext, context_name, ALLOCSET_DEFAULT_SIZES);
}

bool NextLatestRow(LatestRowScan *rows) {
    MemoryContextReset(rows->per_row);
    return table_scan_getnextslot(rows->scan, ForwardScanDirection, rows->slot);
}

void EndLatestRowScan(LatestRowScan *rows) {
    ExecDropSingleTupleTableSlot(rows->slot);
    table_endscan(rows->scan);
    UnregisterSnapshot(rows->snapshot);
    MemoryContextDelete(rows->per_row);
}

// The row's tombstone key, its primary key checked to have a canonical form
// first; false without a primary key or with a NULL key column.
bool CheckedRowKey(Relation rel, HeapTuple row, Datum *key) {
    RequireCanonicalRowKeyCached(rel);
    return RowKeyOf(rel, row, key);
}

}  // namespace

void RequireTombstoneKeyFits(Relation rel, Oid home_relid, Datum key, bool compressed) {
    Size size = TombstoneIndexTupleSize(home_relid, key, compressed);
    Size limit = TombstoneIndexTupleLimit();
    if (size <= limit)
        return;
    StringInfoData columns;
    initStringInfo(&columns);
    PrimaryKey pk;
    if (GetPrimaryKey(rel, &pk))
        for (int i = 0; i < pk.natts; ++i)
            appendStringInfo(
                &columns, "%s%s", i > 0 ? ", " : "",
                quote_identifier(
                    NameStr(TupleDescAttr(RelationGetDescr(rel), pk.attnums[i] - 1)->attname)));
    ereport(ERROR,
            (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
             errmsg("primary key (%s) of table %s is too long for a fencing tombstone",
                    columns.data, RelName(home_relid)),
             errdetail("A deleted row of a table fenced in row scope leaves a tombstone under its "
                       "primary key, in the hex of the key columns' binary form: this key %s "
                       "%zu bytes in fencing.row_tombstone's index, which holds at most %zu "
                       "(about %zu bytes of key data).",
                       compressed ? "would take" : "can take", size, limit, (limit - 40) / 2),
             errhint("Use a shorter primary key (a surrogate or a hash of the long value), or "
                     "protect the table with scope => 'table' or 'resource'. A row already "
                     "stored with such a key can only be deleted once the table is "
                     "unprotected (fencing_unprotect()).")));
}

void RequireTombstoneKeysFitRows(Oid relid) {
    // relid first (find_all_inheritors locks only what is under it; the
    // callers, fencing_protect() and auto-protection, may not have locked it
    // yet), then every partition, in the mode the guards' CREATE TRIGGER
    // takes next: no row is written between this scan and the guards, and no
    // lock is upgraded later (two callers upgrading deadlock).
    LockRelationOid(relid, ShareRowExclusiveLock);
    List *rels = find_all_inheritors(relid, ShareRowExclusiveLock, nullptr);
    ListCell *lc;
    foreach (lc, rels) {
        if (get_rel_relkind(lfirst_oid(lc)) != RELKIND_RELATION)
            continue;
        Relation rel = table_open(lfirst_oid(lc), NoLock);  // locked by find_all_inheritors
        PrimaryKey pk;
        // Only a key with a column of variable width can grow that long.
        bool variable = false;
        if (GetPrimaryKey(rel, &pk))
            for (int i = 0; i < pk.natts; ++i)
                variable |= TupleDescAttr(RelationGetDescr(rel), pk.attnums[i] - 1)->attlen < 0;
        if (variable) {
            LatestRowScan rows;
            BeginLatestRowScan(&rows, rel, "fencing key check");
            while (NextLatestRow(&rows)) {
                CHECK_FOR_INTERRUPTS();
                MemoryContext old = MemoryContextSwitchTo(rows.per_row);
                Datum key;
                if (RowKeyOf(rel, ExecFetchSlotHeapTuple(rows.slot, false, nullptr), &key))
                    RequireTombstoneKeyFits(rel, relid, key, false);
                MemoryContextSwitchTo(old);
            }
            EndLatestRowScan(&rows);
        }
        table_close(rel, NoLock);
    }
}

bool RowTombstone(Relation rel, Oid home_relid, HeapTuple new_row, Token *hwm, bool *floor) {
    if (floor != nullptr)
        *floor = false;
    Datum key;
    if (!CheckedRowKey(rel, new_row, &key))
        return false;
    // A key that might not leave its tombstone is refused on the way in.
    RequireTombstoneKeyFits(rel, home_relid, key, false);
    return ReadTombstone(home_relid, key, hwm, floor);
}

void RequireRowKeyFits(Relation rel, Oid home_relid, HeapTuple new_row) {
    // The rows of a COPY or INSERT ... SELECT after the first: no key built.
    if (RowKeyFitsCached(rel))
        return;
    Datum key;
    if (CheckedRowKey(rel, new_row, &key)) {
        RequireTombstoneKeyFits(rel, home_relid, key, false);
        NoteRowKeyFits(rel);
    }
}

namespace {

// Calls visit(leaf, index, keys, nkeys) with the key's scan keys on the
// primary key of rel, or of each leaf partition when rel is partitioned,
// until it returns true; whether one did.
template <typename Visit>
bool ForEachKeyIndex(Relation rel, const Datum *values, Visit visit) {
    // A partitioned table (fencing_advance() names the root) has no storage,
    // nor has its primary key, a partitioned index: scanning it crashed the
    // backend. The key's row is in one of the leaf partitions, whose primary
    // keys have the root's columns in the root's order: each is looked at.
    if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE) {
        List *parts = find_all_inheritors(RelationGetRelid(rel), AccessShareLock, nullptr);
        ListCell *lc;
        foreach (lc, parts) {
            Oid part = lfirst_oid(lc);
            if (get_rel_relkind(part) != RELKIND_RELATION)
                continue;  // the root, sub-partitioned tables, foreign tables
            Relation leaf = table_open(part, NoLock);  // locked by find_all_inheritors
            bool done = ForEachKeyIndex(leaf, values, visit);
            table_close(leaf, NoLock);
            if (done)
                return true;
        }
        return false;
    }
    PrimaryKey pk;
    if (!GetPrimaryKey(rel, &pk))
        return false;
    Relation index = index_open(PrimaryKeyIndex(rel), AccessShareLock);
    ScanKeyData keys[INDEX_MAX_KEYS];
    for (int i = 0; i < pk.natts; ++i) {
        Oid opfamily = index->rd_opfamily[i];
        Oid type = index->rd_opcintype[i];
        Oid eqop = get_opfamily_member(opfamily, type, type, BTEqualStrategyNumber);
        ScanKeyEntryInitialize(&keys[i], 0, i + 1, BTEqualStrategyNumber, InvalidOid,
                               index->rd_indcollation[i], get_opcode(eqop), values[i]);
    }
    bool done = visit(rel, index, keys, pk.natts);
    index_close(index, AccessShareLock);
    return done;
}

}  // namespace

void WaitForKeyWritersOf(Relation rel, const Datum *values) {
    ForEachKeyIndex(rel, values, [](Relation leaf, Relation index, ScanKey keys, int nkeys) {
        WaitForIndexWriters(leaf, index, keys, nkeys);
        return false;
    });
}

bool KeyHasLatestRow(Relation rel, const Datum *values) {
    return ForEachKeyIndex(rel, values, [](Relation leaf, Relation index, ScanKey keys, int nkeys) {
        Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
        IndexScanDesc scan = BeginIndexScan(leaf, index, snapshot, nkeys, 0);
        index_rescan(scan, keys, nkeys, nullptr, 0);
        TupleTableSlot *slot = table_slot_create(leaf, nullptr);
        bool found = index_getnext_slot(scan, ForwardScanDirection, slot);
        ExecDropSingleTupleTableSlot(slot);
        index_endscan(scan);
        UnregisterSnapshot(snapshot);
        return found;
    });
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

bool RowTombstoneAfterWriters(Relation rel, Oid home_relid, HeapTuple row, Token *hwm,
                              bool *floor) {
    if (floor != nullptr)
        *floor = false;
    Datum key;
    if (!CheckedRowKey(rel, row, &key))
        return false;
    return TombstoneAfterWriters(home_relid, key, hwm, floor);
}

void LeaveTombstone(Relation rel, Oid home_relid, HeapTuple old_row, Token hwm, bool deferrable) {
    // Before any tombstone or floor write, deferred or not.
    RefuseTombstoneWhilePublished(home_relid);
    if (deferrable && DeferFoldedRow(home_relid, hwm))
        return;
    Datum key;
    if (!CheckedRowKey(rel, old_row, &key))
        return;
    RequireTombstoneKeyFits(rel, home_relid, key, true);
    if (deferrable && DeferRemovedRow(home_relid, key, hwm))
        return;
    InternalSession access;
    BeginInternal(&access);
    RaiseTombstone(home_relid, key, hwm);
    EndInternal(&access);
}

namespace {

// Calls visit(key, token, has_token) for every row of rel (a leaf) that has
// a key (with_null: also those whose token is NULL), read with the latest
// snapshot, in one internal session (one per row costs more than the work on
// it), while visit returns true. False when rel has no primary key. The
// caller holds a lock on rel that keeps every writer out.
template <typename Visit>
bool ForEachKeyedRow(Relation rel, AttrNumber token_attnum, bool with_null, Visit visit) {
    RequireCanonicalRowKeyCached(rel);
    PrimaryKey pk;
    if (!GetPrimaryKey(rel, &pk))
        return false;
    LatestRowScan rows;
    BeginLatestRowScan(&rows, rel, "fencing tombstones");
    InternalSession access;
    BeginInternal(&access);
    bool more = true;
    while (more && NextLatestRow(&rows)) {
        bool isnull;
        Datum token = slot_getattr(rows.slot, token_attnum, &isnull);
        if (isnull && !with_null)
            continue;
        MemoryContext caller = MemoryContextSwitchTo(rows.per_row);
        bool should_free;
        HeapTuple row = ExecFetchSlotHeapTuple(rows.slot, false, &should_free);
        Datum key;
        if (RowKeyOf(rel, row, &key))
            more =
                visit(key, isnull ? Token{0} : static_cast<Token>(DatumGetInt64(token)), !isnull);
        MemoryContextSwitchTo(caller);
    }
    EndInternal(&access);
    EndLatestRowScan(&rows);
    return true;
}

}  // namespace

namespace {

// A B-tree index of rel that orders every row by its token alone first: valid,
// not partial, usable by any snapshot, its first column the token column with
// the token type's default ordering. InvalidOid when rel has none.
Oid TokenOrderIndex(Relation rel, AttrNumber token_attnum, bool *descending) {
    Oid type = TupleDescAttr(RelationGetDescr(rel), token_attnum - 1)->atttypid;
    Oid opclass = GetDefaultOpClass(type, BTREE_AM_OID);
    if (!OidIsValid(opclass))
        return InvalidOid;
    Oid family = get_opclass_family(opclass);
    Oid found = InvalidOid;
    List *indexes = RelationGetIndexList(rel);
    ListCell *lc;
    foreach (lc, indexes) {
        Relation index = index_open(lfirst_oid(lc), AccessShareLock);
        Form_pg_index form = index->rd_index;
        bool usable = index->rd_rel->relam == BTREE_AM_OID && form->indisvalid &&
                      form->indisready && form->indislive && !form->indcheckxmin &&
                      form->indkey.values[0] == token_attnum &&
                      index->rd_opfamily[0] == family && index->rd_opcintype[0] == type &&
                      RelationGetIndexPredicate(index) == NIL;
        if (usable) {
            found = RelationGetRelid(index);
            *descending = (index->rd_indoption[0] & INDOPTION_DESC) != 0;
        }
        index_close(index, AccessShareLock);
        if (usable)
            break;
    }
    list_free(indexes);
    return found;
}

// The highest token of rel's rows, read from an index that orders them by
// token (one descent instead of a scan of every row), with the latest
// snapshot like the scans above; false when rel has no such index or no row
// with a token.
bool HighestIndexedToken(Relation rel, AttrNumber token_attnum, Token *highest) {
    bool descending = false;
    Oid index_oid = TokenOrderIndex(rel, token_attnum, &descending);
    if (!OidIsValid(index_oid))
        return false;
    Relation index = index_open(index_oid, AccessShareLock);
    ScanKeyData not_null;
    ScanKeyEntryInitialize(&not_null, SK_ISNULL | SK_SEARCHNOTNULL, 1, InvalidStrategy,
                           InvalidOid, InvalidOid, InvalidOid, Datum(0));
    Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
    IndexScanDesc scan = BeginIndexScan(rel, index, snapshot, 1, 0);
    index_rescan(scan, &not_null, 1, nullptr, 0);
    TupleTableSlot *slot = table_slot_create(rel, nullptr);
    bool found = index_getnext_slot(
        scan, descending ? ForwardScanDirection : BackwardScanDirection, slot);
    if (found) {
        bool isnull;
        Datum token = slot_getattr(slot, token_attnum, &isnull);
        found = !isnull;
        if (found)
            *highest = static_cast<Token>(DatumGetInt64(token));
    }
    ExecDropSingleTupleTableSlot(slot);
    index_endscan(scan);
    UnregisterSnapshot(snapshot);
    index_close(index, AccessShareLock);
    return found;
}

}  // namespace

int64 TombstoneEveryRow(Relation rel, Oid home_relid, AttrNumber token_attnum, bool *every_row) {
    // Deferred rows of this transaction first: this one's judge none later.
    WriteDeferredRemovals(home_relid);
    RequireCanonicalRowKeyCached(rel);
    PrimaryKey pk;
    if (!GetPrimaryKey(rel, &pk))
        return 0;
    RemovedRows removed;
    BeginRemovedRows(&removed, home_relid, CurrentMemoryContext);
    if (every_row != nullptr)
        *every_row = true;
    bool index_tried = false;
    LatestRowScan rows;
    BeginLatestRowScan(&rows, rel, "fencing tombstones");
    while (NextLatestRow(&rows)) {
        CHECK_FOR_INTERRUPTS();
        bool isnull;
        Datum token = slot_getattr(rows.slot, token_attnum, &isnull);
        if (isnull)
            continue;
        // A folding removal needs the highest token only, not the keys: an
        // index ordered by token gives it without reading the other rows.
        if (AddRemovedToken(&removed, DatumGetInt64(token))) {
            if (index_tried)
                continue;
            index_tried = true;
            Token highest;
            if (HighestIndexedToken(rel, token_attnum, &highest)) {
                AddRemovedToken(&removed, highest);
                if (every_row != nullptr)
                    *every_row = false;
                break;
            }
            continue;
        }
        MemoryContext caller = MemoryContextSwitchTo(rows.per_row);
        Datum key;
        if (RowKeyOf(rel, ExecFetchSlotHeapTuple(rows.slot, false, nullptr), &key)) {
            RequireTombstoneKeyFits(rel, home_relid, key, true);
            AddRemovedRow(&removed, key, DatumGetInt64(token));
        }
        MemoryContextSwitchTo(caller);
    }
    EndLatestRowScan(&rows);
    return EndRemovedRows(&removed);
}

uint64 KeyHash(Datum key) {
    const Pointer varlena = DatumGetPointer(key);
    auto *bytes = reinterpret_cast<const unsigned char *>(VARDATA_ANY(varlena));
    uint64 hash = hash_bytes_extended(bytes, VARSIZE_ANY_EXHDR(varlena), 0);
    return hash == 0 ? 1 : hash;
}

bool RowBelowTombstone(Relation rel, Oid home_relid, AttrNumber token_attnum, bool *has_token,
                       Token *offered, Token *hwm, bool *floor, bool *unkeyed,
                       bool tombstones_only, const OldKeys *old_keys) {
    bool below = false;
    // A row without a token is below any HWM: its next writer's token would
    // be its first, whatever the key's tombstone or floor says.
    bool keyed =
        ForEachKeyedRow(rel, token_attnum, true, [&](Datum key, Token token, bool tokened) {
            below = LookupTombstone(home_relid, key, hwm, floor) && !(tombstones_only && *floor) &&
                    (!tokened || token < *hwm ||
                     (token == *hwm && !*floor && old_keys != nullptr &&
                      !old_keys->has_key(old_keys->arg, KeyHash(key))));
            if (below) {
                *offered = token;
                *has_token = tokened;
            }
            return !below;
        });
    *unkeyed = false;
    if (keyed || tombstones_only)
        return below;
    // Without a primary key (ATTACH builds the home's on it) no row can be
    // looked up by its key: any row is refused, none judged unread.
    LatestRowScan rows;
    BeginLatestRowScan(&rows, rel, "fencing tombstones");
    *unkeyed = NextLatestRow(&rows);
    EndLatestRowScan(&rows);
    return *unkeyed;
}

void ForEachRowToken(Relation rel, AttrNumber token_attnum, bool keyed,
                     void (*add)(void *arg, Datum key, uint64 key_hash, Token token), void *arg) {
    if (keyed && ForEachKeyedRow(rel, token_attnum, false, [&](Datum key, Token token, bool) {
            add(arg, key, KeyHash(key), token);
            return true;
        }))
        return;
    LatestRowScan rows;
    BeginLatestRowScan(&rows, rel, "fencing row tokens");
    while (NextLatestRow(&rows)) {
        bool isnull;
        Datum token = slot_getattr(rows.slot, token_attnum, &isnull);
        if (!isnull)
            add(arg, Datum(0), 0, static_cast<Token>(DatumGetInt64(token)));
    }
    EndLatestRowScan(&rows);
}

}  // namespace fencing::pg
