#include "pg/hwm/store.hpp"

#include "pg/hwm/lock.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/keys/resource_key.hpp"
#include "pg/catalog/subscriber.hpp"
#include "pg/hwm/raise_registry.hpp"
#include "pg/hwm/durability.hpp"

extern "C" {
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "access/genam.h"
#include "storage/lmgr.h"
#include "storage/bufmgr.h"
#include "access/heapam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/subtrans.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "nodes/primnodes.h"
#include "utils/array.h"
#include "catalog/namespace.h"
#include "executor/tuptable.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/procarray.h"
#include "utils/snapmgr.h"
}

namespace fencing::pg {
namespace {

// A statement on the internal tables, prepared once per backend and kept
// (SPI_keepplan). Every name is schema-qualified and every operator is
// pg_catalog's, so neither the caller's search_path nor a replan can change
// what runs.
InternalStatement resource_raise = {
    "UPDATE fencing.resource_hwm SET hwm = $3"
    " WHERE namespace OPERATOR(pg_catalog.=) $1 AND resource OPERATOR(pg_catalog.=) $2"
    "   AND CASE WHEN $4 THEN hwm OPERATOR(pg_catalog.<) $3"
    "            ELSE hwm OPERATOR(pg_catalog.<=) $3 END",
    4,
    {TEXTOID, TEXTOID, INT8OID, BOOLOID},
    nullptr};
InternalStatement resource_read = {
    "SELECT hwm FROM fencing.resource_hwm"
    " WHERE namespace OPERATOR(pg_catalog.=) $1 AND resource OPERATOR(pg_catalog.=) $2",
    2,
    {TEXTOID, TEXTOID},
    nullptr};
InternalStatement resource_first = {
    "INSERT INTO fencing.resource_hwm (namespace, resource, hwm) VALUES ($1, $2, $3)"
    " ON CONFLICT DO NOTHING",
    3,
    {TEXTOID, TEXTOID, INT8OID},
    nullptr};
InternalStatement table_raise = {
    "UPDATE fencing.table_hwm SET hwm = $2"
    " WHERE relid OPERATOR(pg_catalog.=) $1"
    "   AND CASE WHEN $3 THEN hwm OPERATOR(pg_catalog.<) $2"
    "            ELSE hwm OPERATOR(pg_catalog.<=) $2 END",
    3,
    {OIDOID, INT8OID, BOOLOID},
    nullptr};
InternalStatement table_read = {
    "SELECT hwm FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) $1",
    1,
    {OIDOID},
    nullptr};
InternalStatement table_first = {
    "INSERT INTO fencing.table_hwm (relid, hwm) VALUES ($1, $2) ON CONFLICT DO NOTHING",
    2,
    {OIDOID, INT8OID},
    nullptr};
InternalStatement tombstone_read = {
    "SELECT hwm FROM fencing.row_tombstone"
    " WHERE relid OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2",
    2,
    {OIDOID, TEXTARRAYOID},
    nullptr};
InternalStatement tombstone_raise = {
    "INSERT INTO fencing.row_tombstone AS t (relid, key, hwm) VALUES ($1, $2, $3)"
    " ON CONFLICT (relid, key) DO UPDATE SET hwm = excluded.hwm"
    " WHERE t.hwm OPERATOR(pg_catalog.<) excluded.hwm",
    3,
    {OIDOID, TEXTARRAYOID, INT8OID},
    nullptr};

// Runs a prepared internal statement; returns rows processed.
uint64 Run(InternalStatement *stmt, Datum *values) {
    return RunInternalStatement(stmt, values, nullptr);
}

// First column of the first row as int8, when there is a row.
bool FirstInt8(Token *out) {
    if (SPI_processed == 0)
        return false;
    bool isnull;
    Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    *out = isnull ? 0 : DatumGetInt64(d);
    return true;
}

struct DirectAccess;
bool RowHasKey(const DirectAccess *a, TupleTableSlot *slot);

// The transaction still writing the version a dirty snapshot just showed
// (inserting it, or updating or deleting it), when it is another one;
// InvalidTransactionId otherwise.
TransactionId InFlightWriter(const SnapshotData &dirty) {
    TransactionId xid = TransactionIdIsValid(dirty.xmin) ? dirty.xmin : dirty.xmax;
    return TransactionIdIsValid(xid) && !TransactionIdIsCurrentTransactionId(xid)
               ? xid
               : InvalidTransactionId;
}

// The first other transaction still writing (inserting, updating or
// deleting) an entry of index (on rel) that matches keys, seen with a dirty
// snapshot as the unique check sees it; InvalidTransactionId when none. Then,
// with value_attnum set, *found tells whether a committed (or this
// transaction's) row matches and *value is its int8 column value_attnum.
// With recheck set (a hash index, which returns every row of the key's hash
// value), rows without recheck's key are skipped: neither read nor waited for.
TransactionId IndexWriter(Relation rel, Relation index, ScanKey keys, int nkeys,
                          TupleTableSlot *slot, AttrNumber value_attnum, bool *found, Token *value,
                          ItemPointer found_tid = nullptr, const DirectAccess *recheck = nullptr) {
    SnapshotData dirty;
    InitDirtySnapshot(dirty);
    IndexScanDesc scan = index_beginscan(rel, index, &dirty, nkeys, 0);
    index_rescan(scan, keys, nkeys, nullptr, 0);
    TransactionId writer = InvalidTransactionId;
    if (value_attnum != 0)
        *found = false;
    while (index_getnext_slot(scan, ForwardScanDirection, slot)) {
        if (recheck != nullptr && !RowHasKey(recheck, slot))
            continue;
        writer = InFlightWriter(dirty);
        if (TransactionIdIsValid(writer))
            break;
        if (value_attnum != 0) {
            bool isnull;
            Token v = DatumGetInt64(slot_getattr(slot, value_attnum, &isnull));
            if (!*found || v > *value) {
                *value = v;
                if (found_tid != nullptr)
                    *found_tid = slot->tts_tid;
            }
            *found = true;
        }
    }
    index_endscan(scan);
    return writer;
}

// Waits until the (sub)transaction xid, seen writing an HWM row, has ended or
// been rolled back. XactLockTableWait waits for the topmost transaction as
// soon as xid has committed into its parent (a PL/pgSQL exception block, a
// released savepoint): a writer would then wait for the whole transaction even
// after the savepoint that holds the raise was rolled back. This climbs one
// level at a time instead, each subtransaction's lock being held until it ends.
void WaitForWriter(TransactionId xid) {
    TransactionId level = xid;
    for (;;) {
        LOCKTAG tag;
        SET_LOCKTAG_TRANSACTION(tag, level);
        (void)LockAcquire(&tag, ShareLock, false, false);
        LockRelease(&tag, ShareLock, false);
        if (!TransactionIdIsInProgress(xid))
            return;
        TransactionId parent = SubTransGetParent(level);
        if (TransactionIdIsValid(parent))
            level = parent;  // level committed into its parent, still running
        else
            pg_usleep(1000L);  // a top-level xid seen before it locked itself
        CHECK_FOR_INTERRUPTS();
    }
}

// Which shared HWM a check is about, for the raise registry.
struct DirectTable;
struct SharedHwm {
    HwmKind kind;
    Oid relid;
    const char *identity;
    Size identity_len;
    DirectTable *direct;  // its table's direct path
    const LOCKTAG *tag;   // its HWM lock (pg/hwm/lock.hpp)
    const Datum *key;     // its primary key in that table
};

bool SharedAdmits(const SharedHwm &h, Token offered, Token hwm, bool strict) {
    return AdmitsHere(h.kind, h.relid, h.identity, h.identity_len, offered, hwm, strict);
}

// A raise (or first write): it must commit durably (pg/hwm/durability.hpp), and
// strict mode must remember it: this transaction may write with the token
// again, and nobody else may.
void NoteRaise(const SharedHwm &h, Token token, bool strict) {
    NoteHwmRaised();
    if (strict)
        RecordRaise(h.kind, h.relid, h.identity, h.identity_len, token);
}

// The fast path: the HWM row is found through the primary key index, locked
// (following its update chain to the newest version under READ COMMITTED, as
// EvalPlanQual does), compared, and raised in place. No planner, no executor.
// The lock is held to commit. A missing row (a first write) falls back to the
// SPI statements above, which handle concurrent first writes.
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
};

DirectTable resource_direct = {
    "resource_hwm", 2, {F_TEXTEQ, F_TEXTEQ}, {TEXTOID, TEXTOID}, 3, InvalidOid, InvalidOid, {0, 0}};
DirectTable table_direct = {
    "table_hwm", 1,     {F_OIDEQ, InvalidOid}, {REGCLASSOID, InvalidOid}, 2, InvalidOid,
    InvalidOid,  {0, 0}};
// No direct writes: tombstones are written through SQL (RaiseTombstone),
// which maintains every index, so the lookup index (and any other) may be there.
DirectTable tombstone_direct = {"row_tombstone",
                                2,
                                {F_OIDEQ, F_ARRAY_EQ},
                                {REGCLASSOID, TEXTARRAYOID},
                                3,
                                InvalidOid,
                                InvalidOid,
                                {0, 0},
                                "row_tombstone_lookup",
                                InvalidOid,
                                true};
bool direct_callback_registered = false;

void ForgetDirectTables(Datum, Oid relid) {
    for (DirectTable *t : {&resource_direct, &table_direct, &tombstone_direct}) {
        if (relid == InvalidOid || relid == t->relid || relid == t->index || relid == t->lookup) {
            t->relid = InvalidOid;
            t->index = InvalidOid;
            t->lookup = InvalidOid;
        }
    }
}

// Opens (AccessShareLock) an index that ResolveDirectTable found in its
// table's index list, or gives nullptr when it has been dropped since. The
// table's lock is not held here: an index whose lock we wait for (a REINDEX
// in an open transaction) may be dropped before we get it, and index_open
// would then fail with "could not open relation with OID" (XX000). Holding
// the table's lock instead would deadlock with that DROP INDEX.
Relation OpenIndexIfExists(Oid index) {
    Relation rel = try_relation_open(index, AccessShareLock);
    if (rel != nullptr && rel->rd_rel->relkind != RELKIND_INDEX) {
        relation_close(rel, AccessShareLock);  // the OID reused meanwhile
        return nullptr;
    }
    return rel;
}

// The lookup index as the 1.3 update creates it: hash, valid, not partial,
// on the one expression array_append(key, relid::oid::text) of the primary
// key's columns (relid, key). Anything else under its name is another index.
bool LookupIndexOk(Oid index, AttrNumber relid_attnum, AttrNumber key_attnum) {
    // Dropped meanwhile (see OpenIndexIfExists): not the lookup index.
    Relation index_rel = OpenIndexIfExists(index);
    if (index_rel == nullptr)
        return false;
    bool ok = index_rel->rd_rel->relam == HASH_AM_OID && index_rel->rd_index->indisvalid &&
              index_rel->rd_index->indnkeyatts == 1 && index_rel->rd_index->indkey.values[0] == 0 &&
              RelationGetIndexPredicate(index_rel) == NIL;
    List *exprs = ok ? RelationGetIndexExpressions(index_rel) : NIL;
    ok = ok && list_length(exprs) == 1 && IsA(linitial(exprs), FuncExpr);
    if (ok) {
        FuncExpr *f = linitial_node(FuncExpr, exprs);
        ok = f->funcid == F_ARRAY_APPEND && list_length(f->args) == 2;
        Node *first = ok ? (Node *)linitial(f->args) : nullptr;
        Node *second = ok ? (Node *)lsecond(f->args) : nullptr;
        ok = ok && IsA(first, Var) && ((Var *)first)->varattno == key_attnum &&
             IsA(second, CoerceViaIO) && ((CoerceViaIO *)second)->resulttype == TEXTOID;
        Node *arg = ok ? (Node *)((CoerceViaIO *)second)->arg : nullptr;
        if (ok && IsA(arg, RelabelType))
            arg = (Node *)((RelabelType *)arg)->arg;
        ok = ok && IsA(arg, Var) && ((Var *)arg)->varattno == relid_attnum &&
             ((Var *)arg)->vartype == REGCLASSOID;
    }
    index_close(index_rel, AccessShareLock);
    return ok;
}

bool ResolveDirectTable(DirectTable *t) {
    if (OidIsValid(t->relid))
        return true;
    if (!direct_callback_registered) {
        CacheRegisterRelcacheCallback(ForgetDirectTables, 0);
        direct_callback_registered = true;
    }
    Oid nsp = get_namespace_oid("fencing", true);
    Oid relid = OidIsValid(nsp) ? get_relname_relid(t->name, nsp) : InvalidOid;
    if (!OidIsValid(relid))
        return false;
    Relation rel = table_open(relid, AccessShareLock);
    Oid index = RelationGetPrimaryKeyIndex(rel);
    // The direct path maintains the primary key index only, and assumes the
    // heap access method: anything else (an index someone added, another
    // access method) takes the SPI path, which maintains every index.
    // A read-only table (tombstone_direct) may have any other index, its
    // lookup index among them.
    List *indexes = RelationGetIndexList(rel);
    Oid lookup = t->lookup_name != nullptr ? get_relname_relid(t->lookup_name, nsp) : InvalidOid;
    int others = list_length(indexes) - 1;
    bool has_lookup = OidIsValid(lookup) && list_member_oid(indexes, lookup);
    bool direct_ok = rel->rd_rel->relam == HEAP_TABLE_AM_OID && (others == 0 || t->read_only);
    // The scan keys (key_eq, in index column order) and the HWM read assume
    // the columns of the extension's CREATE TABLE: a primary key rebuilt on
    // other columns, in another order or over retyped ones (a superuser's
    // ALTER TABLE) would have the B-tree compare one type's datum as another
    // (a crash): such a table takes the SPI path, which plans by name.
    TupleDesc desc = RelationGetDescr(rel);
    auto column_is = [desc](AttrNumber attnum, Oid type) {
        return attnum >= 1 && attnum <= desc->natts &&
               !TupleDescAttr(desc, attnum - 1)->attisdropped &&
               TupleDescAttr(desc, attnum - 1)->atttypid == type;
    };
    direct_ok = direct_ok && column_is(t->hwm_attnum, INT8OID);
    for (int i = 0; direct_ok && i < t->nkeys; ++i) direct_ok = column_is(i + 1, t->key_type[i]);
    table_close(rel, AccessShareLock);
    if (!OidIsValid(index) || !direct_ok)
        return false;
    Relation index_rel = OpenIndexIfExists(index);
    if (index_rel == nullptr)
        return false;
    bool keys_ok =
        index_rel->rd_index->indnkeyatts == t->nkeys && index_rel->rd_index->indnatts == t->nkeys;
    for (int i = 0; keys_ok && i < t->nkeys; ++i) {
        t->key_attnum[i] = index_rel->rd_index->indkey.values[i];
        keys_ok = t->key_attnum[i] == i + 1;
    }
    index_close(index_rel, AccessShareLock);
    if (!keys_ok)
        return false;
    if (has_lookup && (t->nkeys != 2 || !LookupIndexOk(lookup, t->key_attnum[0], t->key_attnum[1])))
        return false;  // another index under its name: as any other index
    t->relid = relid;
    t->index = index;
    t->lookup = has_lookup ? lookup : InvalidOid;
    return true;
}

// Opens (and locks, in mode) a direct table and gives its primary key index
// (and its lookup index, or InvalidOid, when lookup_relid is given),
// or nullptr when the table does not have the direct path's shape. t's OIDs
// are cached across transactions and only judged current once the table is
// locked: the lock accepts the invalidation messages of whatever replaced the
// table's primary key index meanwhile (ALTER EXTENSION fencing UPDATE to 1.3
// rebuilds it; so do a superuser's ALTER TABLE and REINDEX CONCURRENTLY),
// and their callback clears t. Opening the OIDs read before the lock would
// then open an index that is gone ("could not open relation with OID", XX000)
// or, between REINDEX CONCURRENTLY's marking the old index dead and dropping
// it, one that writers no longer maintain, whose probe would miss tombstones
// and HWMs written since. So: read the OIDs, lock, and start over if the
// lock's invalidations cleared them. Once the table is locked the index stays
// (dropping it needs the table's AccessExclusiveLock, or REINDEX
// CONCURRENTLY's wait for every locker of the table).
Relation OpenResolved(DirectTable *t, LOCKMODE mode, Oid *index_relid,
                      Oid *lookup_relid = nullptr) {
    for (;;) {
        if (!ResolveDirectTable(t))
            return nullptr;
        // Copies: the callback clears t (M1: "could not open relation with
        // OID 0" under autovacuum).
        Oid relid = t->relid;
        Oid index = t->index;
        Oid lookup = t->lookup;
        Relation rel = table_open(relid, mode);
        if (t->relid == relid && t->index == index && t->lookup == lookup) {
            *index_relid = index;
            if (lookup_relid != nullptr)
                *lookup_relid = lookup;
            return rel;
        }
        // Replaced: resolve again, under the lock now held.
        table_close(rel, NoLock);
    }
}

void InsertIndexEntry(Relation rel, Relation index, HeapTuple tuple) {
    IndexInfo *info = BuildIndexInfo(index);
    Datum values[INDEX_MAX_KEYS];
    bool isnull[INDEX_MAX_KEYS];
    for (int i = 0; i < info->ii_NumIndexAttrs; ++i)
        values[i] =
            heap_getattr(tuple, info->ii_IndexAttrNumbers[i], RelationGetDescr(rel), &isnull[i]);
    index_insert(index, values, isnull, &tuple->t_self, rel, UNIQUE_CHECK_YES, false, info);
}

// A direct table opened for one check: the heap at once, its primary key
// index only when the row hint below does not do (OpenIndex). What the check
// needs of the DirectTable is copied: opening a relation accepts invalidation
// messages, which clear the DirectTable (ForgetDirectTables).
struct DirectAccess {
    LOCKMODE mode;
    int nkeys;
    AttrNumber hwm_attnum;
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

bool OpenDirectHeap(DirectTable *t, LOCKMODE mode, const Datum *key, DirectAccess *a) {
    Oid index_relid;
    Relation rel = OpenResolved(t, mode, &index_relid, &a->lookup_relid);
    if (rel == nullptr)
        return false;
    a->mode = mode;
    a->nkeys = t->nkeys;
    a->hwm_attnum = t->hwm_attnum;
    for (int i = 0; i < t->nkeys; ++i) {
        a->key_attnum[i] = t->key_attnum[i];
        a->key_eq[i] = t->key_eq[i];
    }
    a->key = key;
    a->index_relid = index_relid;
    a->index = nullptr;
    a->rel = rel;
    a->scan_nkeys = 0;
    return true;
}

void OpenIndex(DirectAccess *a) {
    if (a->index != nullptr)
        return;
    a->index = index_open(a->index_relid, a->mode);
    for (int i = 0; i < a->nkeys; ++i)
        ScanKeyEntryInitialize(&a->keys[i], 0, i + 1, BTEqualStrategyNumber, InvalidOid,
                               a->index->rd_indcollation[i], a->key_eq[i], a->key[i]);
    a->scan_nkeys = a->nkeys;
}

void CloseDirect(DirectAccess *a) {
    if (a->index != nullptr)
        index_close(a->index, NoLock);
    table_close(a->rel, NoLock);
}

// Where this backend last found the newest version of an HWM row. Reading
// that version by its TID skips the B-tree descent of the primary key, most of
// the cost of a check at the HWM. Only a hint: the version there is read with
// the check's own snapshot and used only when that snapshot sees it and it
// still carries the key. Anything else (the row raised, reset or vacuumed
// since, the line pointer reused, the relation rewritten) goes to the index,
// which then gives the hint anew.
struct RowHint {
    Oid relid;  // InvalidOid: no hint
    Oid relfilenode;
    ItemPointerData tid;
};

void SetHint(RowHint *hint, Relation rel, ItemPointer tid) {
    hint->relid = RelationGetRelid(rel);
    hint->relfilenode = rel->rd_node.relNode;
    hint->tid = *tid;
}

// Byte equality: "C" equality, as the key columns compare (and as every
// deterministic collation compares for equality).
bool SameText(Datum a, Datum b) {
    text *x = DatumGetTextPP(a);
    text *y = DatumGetTextPP(b);
    Size len = VARSIZE_ANY_EXHDR(x);
    return len == VARSIZE_ANY_EXHDR(y) && memcmp(VARDATA_ANY(x), VARDATA_ANY(y), len) == 0;
}

// Array equality under "C" (array_eq, as the primary key compares), for
// arrays whose bytes differ (an element stored with another header form).
bool SameArray(Datum a, Datum b) {
    static FmgrInfo *array_eq_info = nullptr;
    if (SameText(a, b))
        return true;
    if (array_eq_info == nullptr) {
        FmgrInfo *info =
            static_cast<FmgrInfo *>(MemoryContextAllocZero(TopMemoryContext, sizeof(FmgrInfo)));
        fmgr_info_cxt(F_ARRAY_EQ, info, TopMemoryContext);
        array_eq_info = info;
    }
    return DatumGetBool(FunctionCall2Coll(array_eq_info, C_COLLATION_OID, a, b));
}

// Whether the row in slot carries a's key, exactly: the recheck of a hash
// index's candidates.
bool RowHasKey(const DirectAccess *a, TupleTableSlot *slot) {
    for (int i = 0; i < a->nkeys; ++i) {
        bool isnull;
        Datum value = slot_getattr(slot, a->key_attnum[i], &isnull);
        if (isnull)
            return false;
        bool same = a->key_eq[i] == F_OIDEQ ? DatumGetObjectId(value) == DatumGetObjectId(a->key[i])
                    : a->key_eq[i] == F_ARRAY_EQ ? SameArray(value, a->key[i])
                                                 : SameText(value, a->key[i]);
        if (!same)
            return false;
    }
    return true;
}

// The version at the hint's TID, into slot, when snapshot sees it and it
// carries a's key.
bool FetchHinted(DirectAccess *a, const RowHint *hint, Snapshot snapshot, TupleTableSlot *slot) {
    if (hint->relid != RelationGetRelid(a->rel) || hint->relfilenode != a->rel->rd_node.relNode)
        return false;
    // A TID past the end (the relation truncated by VACUUM) would be a read error.
    if (ItemPointerGetBlockNumber(&hint->tid) >= RelationGetNumberOfBlocks(a->rel))
        return false;
    ItemPointerData tid = hint->tid;
    return table_tuple_fetch_row_version(a->rel, &tid, snapshot, slot) && RowHasKey(a, slot);
}

// IndexWriter for the HWM row of a: through the hint when it holds, else
// through the index (refreshing the hint).
TransactionId ProbeDirty(DirectAccess *a, RowHint *hint, TupleTableSlot *slot, bool *found,
                         Token *value) {
    SnapshotData dirty;
    InitDirtySnapshot(dirty);
    if (FetchHinted(a, hint, &dirty, slot)) {
        // The same rule as IndexWriter: a version that dirty snapshot sees with
        // another transaction's xmin or xmax is a write in flight. A version
        // it sees without one is the row's only live version (the key is
        // unique), so there is nothing else to look at.
        TransactionId writer = InFlightWriter(dirty);
        if (TransactionIdIsValid(writer))
            return writer;
        bool isnull;
        *value = DatumGetInt64(slot_getattr(slot, a->hwm_attnum, &isnull));
        *found = true;
        return InvalidTransactionId;
    }
    OpenIndex(a);
    ItemPointerData tid;
    TransactionId writer = IndexWriter(a->rel, a->index, a->keys, a->scan_nkeys, slot,
                                       a->hwm_attnum, found, value, &tid);
    if (!TransactionIdIsValid(writer) && *found)
        SetHint(hint, a->rel, &tid);
    return writer;
}

// Writers at the HWM (non-strict, the offered token equal to the committed
// HWM) run in parallel: each takes the HWM lock in share mode, held to
// commit, and no row lock. Then it reads the HWM row with a dirty snapshot,
// as the unique check does: the committed value, or a raise (or first write,
// or reset) still in flight, whose transaction it waits for (after letting go
// of the share lock, so that its raiser may lock again) before reading again.
// A raise takes the lock in exclusive mode until its new row version exists
// (DirectCheckAndRaise), so a writer admitted here commits before any raise
// above its token is visible, and one that arrives during a raise queues
// behind it and then sees it.
// True when settled: admitted (the share lock kept) or refused; false when
// the write raises or creates the HWM, or locks the row instead.
bool SettledAtHwm(const SharedHwm &h, Token offered, RowHint *hint, HwmVerdict *verdict) {
    const LOCKTAG *tag = h.tag;
    DirectAccess a;
    if (!MayTakeHwmShareLock() || !OpenDirectHeap(h.direct, AccessShareLock, h.key, &a))
        return false;
    TupleTableSlot *slot = table_slot_create(a.rel, nullptr);
    bool settled = false;
    for (;;) {
        LockHwmShared(tag);
        bool found = false;
        Token hwm = 0;
        TransactionId writer = ProbeDirty(&a, hint, slot, &found, &hwm);
        if (TransactionIdIsValid(writer)) {
            UnlockHwmShared(tag);
            WaitForWriter(writer);
            continue;
        }
        if (found && hwm == offered) {
            *verdict = {true, offered};
            settled = true;
            break;
        }
        UnlockHwmShared(tag);
        if (found && hwm > offered) {
            *verdict = {false, hwm};
            settled = true;
        }
        break;
    }
    ExecDropSingleTupleTableSlot(slot);
    CloseDirect(&a);
    return settled;
}

// Under session_replication_role = replica the state tables' replica trigger
// (fencing.replica_keep_highest) makes an INSERT write the row itself, and
// the statement then reports no row: a first HWM written that way cannot be
// told from a refusal by the row count. Such a session's commit is made
// durable whenever it ran a statement that may raise.
bool ReplicaTriggerMayWrite() {
    return SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA;
}

// Whether a raise may be written in place (simple_heap_update), which fires
// no trigger: only while no UPDATE trigger of the HWM table would fire in
// this session. Such a trigger must see every raise: pg_repack's log
// trigger, which replays the writes made during its copy into the new heap
// before the swap (a raise it never saw would be lost), or an audit trigger
// a DBA added. With one, the SPI path's UPDATE settles the write, and fires
// it. The extension's own ENABLE REPLICA trigger (logical replication apply)
// fires only under session_replication_role = replica, so it is judged the
// way the executor judges it (TriggerEnabled in trigger.c). rel must be
// locked in RowExclusiveLock by this statement: a trigger is created or
// enabled under a lock that conflicts with it (CREATE/ALTER TRIGGER's
// ShareRowExclusiveLock, pg_repack's ACCESS EXCLUSIVE), so it committed
// before the lock was granted and the relcache, which took its invalidation
// when the lock was, shows it; and none can be created before this
// transaction ends.
bool WritesDirectly(Relation rel) {
    if (rel->trigdesc == nullptr)
        return true;
    bool replica = SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA;
    for (int i = 0; i < rel->trigdesc->numtriggers; ++i) {
        const Trigger &trigger = rel->trigdesc->triggers[i];
        if (!TRIGGER_FOR_UPDATE(trigger.tgtype) || trigger.tgenabled == TRIGGER_DISABLED)
            continue;
        bool fires = replica ? trigger.tgenabled != TRIGGER_FIRES_ON_ORIGIN
                             : trigger.tgenabled != TRIGGER_FIRES_ON_REPLICA;
        if (fires)
            return false;
    }
    return true;
}

// True when settled (verdict filled in); false when the row does not exist,
// or when the SPI path must write it (WritesDirectly). A raise holds the HWM
// lock in exclusive mode from before it locks the row until its new row
// version exists: it waits for the writers admitted at the HWM before it, and
// those that come later see the raise (SettledAtHwm).
bool DirectCheckAndRaise(const SharedHwm &h, Token offered, bool strict, RowHint *hint,
                         HwmVerdict *verdict) {
    const LOCKTAG *tag = h.tag;
    DirectAccess a;
    if (!OpenDirectHeap(h.direct, RowExclusiveLock, h.key, &a))
        return false;
    if (!WritesDirectly(a.rel)) {
        CloseDirect(&a);
        return false;
    }
    Relation rel = a.rel;
    Snapshot snapshot = RegisterSnapshot(GetTransactionSnapshot());
    TupleTableSlot *slot = table_slot_create(rel, nullptr);
    // The hinted version, when this snapshot sees it, is the version the
    // index would give (the key is unique).
    bool found = FetchHinted(&a, hint, snapshot, slot);
    if (!found) {
        OpenIndex(&a);
        IndexScanDesc scan = index_beginscan(rel, a.index, snapshot, a.scan_nkeys, 0);
        index_rescan(scan, a.keys, a.scan_nkeys, nullptr, 0);
        found = index_getnext_slot(scan, ForwardScanDirection, slot);
        index_endscan(scan);
    }
    ItemPointerData tid;
    if (found)
        tid = slot->tts_tid;

    bool settled = false;
    bool isnull;
    Token visible_hwm = found ? DatumGetInt64(slot_getattr(slot, a.hwm_attnum, &isnull)) : 0;
    if (found && !SharedAdmits(h, offered, visible_hwm, strict)) {
        // HWMs only rise, so the newest version refuses the token too: stale,
        // without taking a lock that would make the next writer wait for us.
        *verdict = {false, visible_hwm};
        settled = true;
    } else if (found) {
        // A raise as far as this snapshot tells; an equal token (strict: this
        // transaction's own raise; non-strict: a writer at the HWM that locks
        // the row instead of sharing the HWM lock) needs the row lock only.
        bool exclusive = offered > visible_hwm;
        if (exclusive)
            LockHwmExclusive(tag);
        TM_FailureData failure;
        int flags = IsolationUsesXactSnapshot() ? 0 : TUPLE_LOCK_FLAG_FIND_LAST_VERSION;
        TM_Result result = table_tuple_lock(
            rel, &tid, snapshot, slot, GetCurrentCommandId(false), LockTupleNoKeyExclusive,
            exclusive ? LockWaitSkip : LockWaitBlock, flags, &failure);
        if (result == TM_WouldBlock) {
            // Another raise is in flight (or a writer holds the row): wait
            // for it without the HWM lock, which its transaction may ask for
            // again (a write at the HWM it raised); take the lock again below
            // if this is still a raise.
            UnlockHwmExclusive(tag);
            exclusive = false;
            result = table_tuple_lock(rel, &tid, snapshot, slot, GetCurrentCommandId(false),
                                      LockTupleNoKeyExclusive, LockWaitBlock, flags, &failure);
        }
        if (result == TM_Ok) {
            // The newest version, locked.
            SetHint(hint, rel, &slot->tts_tid);
            Token hwm = DatumGetInt64(slot_getattr(slot, a.hwm_attnum, &isnull));
            if (!SharedAdmits(h, offered, hwm, strict)) {
                *verdict = {false, hwm};
            } else {
                if (offered > hwm) {
                    // Lower than the snapshot showed (a reset): a raise after all.
                    if (!exclusive) {
                        LockHwmExclusive(tag);
                        exclusive = true;
                    }
                    bool should_free;
                    HeapTuple old_version = ExecFetchSlotHeapTuple(slot, true, &should_free);
                    Datum value = Int64GetDatum(offered);
                    bool value_null = false;
                    int attnum = a.hwm_attnum;
                    HeapTuple raised = heap_modify_tuple_by_cols(old_version, RelationGetDescr(rel),
                                                                 1, &attnum, &value, &value_null);
                    // We hold the row lock, so the update cannot meet a
                    // concurrent one. The key columns do not change: with
                    // fillfactor 50 the new version is usually heap-only and
                    // needs no index entry.
                    simple_heap_update(rel, &slot->tts_tid, raised);
                    if (!HeapTupleIsHeapOnly(raised)) {
                        OpenIndex(&a);
                        InsertIndexEntry(rel, a.index, raised);
                    }
                    SetHint(hint, rel, &raised->t_self);
                    // Later rows of this statement must see the raised HWM.
                    CommandCounterIncrement();
                    NoteRaise(h, offered, strict);
                }
                *verdict = {true, offered};
            }
            settled = true;
        } else if ((result == TM_Updated || result == TM_Deleted) && IsolationUsesXactSnapshot()) {
            ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                            errmsg("could not serialize access due to concurrent update of a "
                                   "fencing high-water mark")));
        }
        // Otherwise (deleted by fencing_reset, or changed by this very
        // command) the SPI path settles it.
        if (exclusive)
            UnlockHwmExclusive(tag);
    }
    ExecDropSingleTupleTableSlot(slot);
    UnregisterSnapshot(snapshot);
    CloseDirect(&a);
    return settled;
}

// The HWMs this backend last saw, by HWM lock: only a hint, choosing which
// mode to ask for first. A token above the HWM seen is most likely a raise,
// which then asks for the exclusive mode at once instead of sharing first;
// anything else tries the share mode first. Every verdict is reached under
// the lock either way. At most kSeenCapacity entries: when full, it starts
// over.
struct SeenHwm {
    LOCKTAG tag;  // hash key
    Token hwm;
    RowHint row;
};
constexpr long kSeenCapacity = 1024;
HTAB *seen_hwms = nullptr;

SeenHwm *FindSeen(const LOCKTAG *tag) {
    if (seen_hwms == nullptr)
        return nullptr;
    return static_cast<SeenHwm *>(hash_search(seen_hwms, tag, HASH_FIND, nullptr));
}

void NoteSeen(const LOCKTAG *tag, Token hwm, const RowHint &row) {
    if (seen_hwms != nullptr && hash_get_num_entries(seen_hwms) >= kSeenCapacity) {
        hash_destroy(seen_hwms);
        seen_hwms = nullptr;
    }
    if (seen_hwms == nullptr) {
        HASHCTL ctl;
        ctl.keysize = sizeof(LOCKTAG);
        ctl.entrysize = sizeof(SeenHwm);
        ctl.hcxt = TopMemoryContext;
        seen_hwms =
            hash_create("fencing HWMs seen", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
    }
    auto *e = static_cast<SeenHwm *>(hash_search(seen_hwms, tag, HASH_ENTER, nullptr));
    e->hwm = hwm;
    e->row = row;
}

// Resource and table scope through the direct path. False when the SPI path
// must settle it (a first write, a table not of the direct path's shape, or
// one with a trigger).
bool SettleDirect(const SharedHwm &h, Token offered, bool strict, HwmVerdict *verdict) {
    // Nothing below touches seen_hwms, so the entry stays valid.
    SeenHwm *seen = FindSeen(h.tag);
    bool expect_raise = seen != nullptr && offered > seen->hwm;
    RowHint hint = {InvalidOid, InvalidOid, {}};
    if (seen != nullptr)
        hint = seen->row;
    if ((strict || expect_raise || !SettledAtHwm(h, offered, &hint, verdict)) &&
        !DirectCheckAndRaise(h, offered, strict, &hint, verdict))
        return false;
    Token hwm = verdict->admitted ? offered : verdict->hwm;
    if (seen != nullptr) {
        seen->hwm = hwm;
        seen->row = hint;
    } else {
        NoteSeen(h.tag, hwm, hint);
    }
    return true;
}

// A raise through SPI (a first write, or an HWM table not of the direct path's
// shape or with a trigger) holds the HWM lock exclusively, but not while
// waiting for another raise of the row still in flight: its SPI statements
// would wait for that raiser, whose transaction may ask for the lock again (a
// write at the HWM it raised). So: lock, look for such a raiser (dirty
// snapshot), and if there is one let go, wait for it, and start again.
void LockForSpiRaise(DirectTable *t, const LOCKTAG *tag, const Datum *key) {
    DirectAccess a;
    if (!OpenDirectHeap(t, AccessShareLock, key, &a)) {
        LockHwmExclusive(tag);
        return;
    }
    OpenIndex(&a);
    TupleTableSlot *slot = table_slot_create(a.rel, nullptr);
    for (;;) {
        LockHwmExclusive(tag);
        TransactionId writer =
            IndexWriter(a.rel, a.index, a.keys, a.scan_nkeys, slot, 0, nullptr, nullptr);
        if (!TransactionIdIsValid(writer))
            break;
        UnlockHwmExclusive(tag);
        WaitForWriter(writer);
    }
    ExecDropSingleTupleTableSlot(slot);
    CloseDirect(&a);
}

// The shared loop of resource and table scope:
//   1. conditional UPDATE: one row means admitted, and the row stays locked;
//   2. otherwise read: a row that does not admit the token means stale;
//   3. no row yet: INSERT ... ON CONFLICT DO NOTHING; one row means admitted.
// Steps 2 and 3 can lose a race with a concurrent first write; then the loop
// runs again against the row that writer committed. In REPEATABLE READ such a
// race raises a serialization failure inside step 3 instead.
HwmVerdict CheckAndRaiseViaSpi(const SharedHwm &h, InternalStatement *raise,
                               InternalStatement *read, InternalStatement *first, Datum *raise_args,
                               Datum *read_args, Datum *first_args, Token offered, bool strict) {
    LockForSpiRaise(h.direct, h.tag, h.key);
    if (ReplicaTriggerMayWrite())
        NoteHwmRaised();
    InternalSession access;
    BeginInternal(&access);
    HwmVerdict verdict = {false, 0};
    bool settled = false;
    for (int attempt = 0; attempt < 8 && !settled; ++attempt) {
        if (Run(raise, raise_args) > 0) {
            NoteRaise(h, offered, strict);
            verdict = {true, offered};
            settled = true;
            break;
        }
        Run(read, read_args);
        Token hwm;
        if (FirstInt8(&hwm)) {
            // Strict, equal, and raised by this transaction, which holds the
            // row's lock since: admitted without a write. Any other admitting
            // value goes round again to the conditional UPDATE, which locks
            // the row: admitting on a read alone would let a raise commit in
            // between (read, check, write).
            if (strict && offered == hwm &&
                RaisedHere(h.kind, h.relid, h.identity, h.identity_len, offered)) {
                verdict = {true, offered};
                settled = true;
            } else if (!SharedAdmits(h, offered, hwm, strict)) {
                verdict = {false, hwm};
                settled = true;
            }
            continue;
        }
        if (Run(first, first_args) > 0) {
            NoteRaise(h, offered, strict);
            verdict = {true, offered};
            settled = true;
        }
    }
    EndInternal(&access);
    UnlockHwmExclusive(h.tag);
    if (settled)
        return verdict;
    ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                    errmsg("could not settle the fencing high-water mark under concurrent "
                           "first writes"),
                    errhint("Retry the transaction.")));
    pg_unreachable();
}

}  // namespace

HwmVerdict CheckAndRaiseResource(const char *name_space, const char *resource, Token offered,
                                 bool strict) {
    RequireStorableResourceKey(name_space, resource);
    Datum ns = CStringGetTextDatum(name_space);
    Datum res = CStringGetTextDatum(resource);
    // "<namespace>\0<resource>"
    Size ns_len = strlen(name_space);
    Size identity_len = ns_len + 1 + strlen(resource);
    char *identity = static_cast<char *>(palloc(identity_len + 1));
    memcpy(identity, name_space, ns_len + 1);
    strcpy(identity + ns_len + 1, resource);
    Datum key[] = {ns, res};
    LOCKTAG tag;
    ResourceHwmLockTag(&tag, identity, identity_len);
    SharedHwm h = {HwmKind::kResource, InvalidOid, identity, identity_len,
                   &resource_direct,   &tag,       key};
    HwmVerdict verdict;
    if (SettleDirect(h, offered, strict, &verdict))
        return verdict;
    Datum raise_args[] = {ns, res, Int64GetDatum(offered), BoolGetDatum(strict)};
    Datum read_args[] = {ns, res};
    Datum first_args[] = {ns, res, Int64GetDatum(offered)};
    return CheckAndRaiseViaSpi(h, &resource_raise, &resource_read, &resource_first, raise_args,
                               read_args, first_args, offered, strict);
}

HwmVerdict CheckAndRaiseTable(Oid home_relid, Token offered, bool strict) {
    Datum rel = ObjectIdGetDatum(home_relid);
    Datum key[] = {rel};
    LOCKTAG tag;
    TableHwmLockTag(&tag, home_relid);
    SharedHwm h = {HwmKind::kTable, home_relid, nullptr, 0, &table_direct, &tag, key};
    HwmVerdict verdict;
    if (SettleDirect(h, offered, strict, &verdict))
        return verdict;
    Datum raise_args[] = {rel, Int64GetDatum(offered), BoolGetDatum(strict)};
    Datum read_args[] = {rel};
    Datum first_args[] = {rel, Int64GetDatum(offered)};
    return CheckAndRaiseViaSpi(h, &table_raise, &table_read, &table_first, raise_args, read_args,
                               first_args, offered, strict);
}

namespace {

// The lookup index's value for the key: the key's elements and the relid's
// decimal text (oidout), as array_append(key, relid::oid::text) computes it.
Datum LookupValue(Oid home_relid, Datum key) {
    ArrayType *array = DatumGetArrayTypeP(key);
    Datum *elems;
    bool *nulls;
    int n;
    deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
    elems = static_cast<Datum *>(repalloc(elems, (n + 1) * sizeof(Datum)));
    nulls = static_cast<bool *>(repalloc(nulls, (n + 1) * sizeof(bool)));
    elems[n] = CStringGetTextDatum(psprintf("%u", home_relid));
    nulls[n] = false;
    int dims[] = {n + 1};
    int lbs[] = {1};
    return PointerGetDatum(
        construct_md_array(elems, nulls, 1, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT));
}

// Opens the index a tombstone read goes through: the lookup index when
// row_tombstone has it (one scan key; returns a, whose key the caller must
// recheck on every row the scan returns, which holds every row of the
// value's hash), else the primary key (returns nullptr).
const DirectAccess *OpenTombstoneIndex(DirectAccess *a, Oid home_relid, Datum key) {
    if (!OidIsValid(a->lookup_relid)) {
        OpenIndex(a);
        return nullptr;
    }
    a->index = index_open(a->lookup_relid, a->mode);
    ScanKeyEntryInitialize(&a->keys[0], 0, 1, HTEqualStrategyNumber, InvalidOid,
                           a->index->rd_indcollation[0], F_ARRAY_EQ, LookupValue(home_relid, key));
    a->scan_nkeys = 1;
    return a;
}

// The key's tombstone through row_tombstone's lookup index (else its primary
// key index), read with the latest snapshot. No internal session is needed: nothing runs but
// an index scan on the extension's table (no SQL, no permission check; the
// caller's grants and RLS cannot apply, as under the internal session's
// owner). The AccessShareLock is held to commit, as the SPI read's would be.
// False when the table is not of the direct path's shape.
bool LookupTombstoneDirect(Oid home_relid, Datum key, Token *hwm, bool *found) {
    Datum values[] = {ObjectIdGetDatum(home_relid), key};
    DirectAccess a;
    if (!OpenDirectHeap(&tombstone_direct, AccessShareLock, values, &a))
        return false;
    const DirectAccess *recheck = OpenTombstoneIndex(&a, home_relid, key);
    Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
    TupleTableSlot *slot = table_slot_create(a.rel, nullptr);
    IndexScanDesc scan = index_beginscan(a.rel, a.index, snapshot, a.scan_nkeys, 0);
    index_rescan(scan, a.keys, a.scan_nkeys, nullptr, 0);
    while ((*found = index_getnext_slot(scan, ForwardScanDirection, slot)) && recheck != nullptr &&
           !RowHasKey(recheck, slot)) {
    }
    if (*found) {
        bool isnull;
        Datum d = slot_getattr(slot, a.hwm_attnum, &isnull);
        *hwm = isnull ? 0 : DatumGetInt64(d);
    }
    index_endscan(scan);
    ExecDropSingleTupleTableSlot(slot);
    UnregisterSnapshot(snapshot);
    CloseDirect(&a);
    return true;
}

// The same read through SPI (a row_tombstone not of the direct path's
// shape); the caller is inside an internal session.
bool LookupTombstoneViaSpi(Oid home_relid, Datum key, Token *hwm) {
    Datum args[] = {ObjectIdGetDatum(home_relid), key};
    int rc = SPI_execute_snapshot(InternalPlan(&tombstone_read), args, nullptr, GetLatestSnapshot(),
                                  InvalidSnapshot, true, false, 1);
    if (rc < 0)
        ereport(ERROR,
                (errcode(ERRCODE_INTERNAL_ERROR),
                 errmsg("fencing: internal statement failed: %s", SPI_result_code_string(rc))));
    return FirstInt8(hwm);
}

// LookupTombstoneViaSpi in an internal session of its own.
bool LookupTombstoneInSession(Oid home_relid, Datum key, Token *hwm) {
    InternalSession access;
    BeginInternal(&access);
    bool found = LookupTombstoneViaSpi(home_relid, key, hwm);
    EndInternal(&access);
    return found;
}

}  // namespace

// The latest snapshot, not the transaction's: under REPEATABLE READ a
// tombstone committed after our snapshot must still stop a stale INSERT.
bool LookupTombstone(Oid home_relid, Datum key, Token *hwm) {
    bool found;
    if (LookupTombstoneDirect(home_relid, key, hwm, &found))
        return found;
    return LookupTombstoneViaSpi(home_relid, key, hwm);
}

bool ReadTombstone(Oid home_relid, Datum key, Token *hwm) {
    bool found;
    if (LookupTombstoneDirect(home_relid, key, hwm, &found))
        return found;
    return LookupTombstoneInSession(home_relid, key, hwm);
}

void RaiseTombstone(Oid home_relid, Datum key, Token hwm) {
    Datum args[] = {ObjectIdGetDatum(home_relid), key, Int64GetDatum(hwm)};
    // Written or raised; in replica mode possibly written by the replica
    // trigger instead (ReplicaTriggerMayWrite).
    if (Run(&tombstone_raise, args) > 0 || ReplicaTriggerMayWrite())
        NoteHwmRaised();
}

namespace {

// Runs a fixed statement (inside an internal session) with the latest
// snapshot, not the transaction's: DDL carrying state from one relation to
// another must read what committed before it got its locks, also under
// REPEATABLE READ (as LookupTombstone).
uint64 RunLatest(const char *sql, int nargs, Oid *types, Datum *values) {
    SPIPlanPtr plan = SPI_prepare(sql, nargs, types);
    if (plan == nullptr)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("fencing: could not prepare internal statement: %s",
                               SPI_result_code_string(SPI_result))));
    int rc = SPI_execute_snapshot(plan, values, nullptr, GetLatestSnapshot(), InvalidSnapshot,
                                  false, false, 0);
    if (rc < 0)
        ereport(ERROR,
                (errcode(ERRCODE_INTERNAL_ERROR),
                 errmsg("fencing: internal statement failed: %s", SPI_result_code_string(rc))));
    SPI_freeplan(plan);
    return SPI_processed;
}

// The first row's first column as int8, when there is a row and it is not NULL.
bool FirstInt8NotNull(Token *out) {
    if (SPI_processed == 0)
        return false;
    bool isnull;
    Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    if (isnull)
        return false;
    *out = DatumGetInt64(d);
    return true;
}

// Deletes HWM rows and logs each one with the calling user (captured before
// the internal session switched the user id); returns how many were removed.
int64 ResetAndLog(const char *delete_sql, int nargs, Oid *types, Datum *values, const char *target,
                  const char *caller) {
    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfo(
        &sql,
        "WITH gone AS (%s) INSERT INTO fencing.reset_log (reset_by, target, key, old_hwm)"
        " SELECT %s::pg_catalog.name, %s::pg_catalog.text, gone.key, gone.hwm FROM gone",
        delete_sql, quote_literal_cstr(caller), quote_literal_cstr(target));
    RunInternalSql(sql.data, nargs, types, values, nullptr, false);
    int64 removed = static_cast<int64>(SPI_processed);
    ereport(LOG, (errmsg("fencing_reset: %s removed " INT64_FORMAT " high-water mark(s) of %s",
                         caller, removed, target)));
    return removed;
}

}  // namespace

bool ReadResourceHwm(const char *name_space, const char *resource, Token *hwm) {
    Oid types[] = {TEXTOID, TEXTOID};
    Datum values[] = {CStringGetTextDatum(name_space), CStringGetTextDatum(resource)};
    RunInternalSql(
        "SELECT hwm FROM fencing.resource_hwm WHERE namespace OPERATOR(pg_catalog.=) $1"
        " AND resource OPERATOR(pg_catalog.=) $2",
        2, types, values, nullptr, true);
    return FirstInt8NotNull(hwm);
}

bool ReadTableHwm(Oid relid, Token *hwm) {
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    RunInternalSql("SELECT hwm FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) $1", 1,
                   types, values, nullptr, true);
    return FirstInt8NotNull(hwm);
}

bool HasTombstones(Oid relid) {
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    return RunInternalSql(
               "SELECT 1 FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) $1 LIMIT 1",
               1, types, values, nullptr, true) > 0;
}

void MaxStoredHwms(Datum relids, bool *has_table, Token *table_hwm, bool *has_tombstone,
                   Token *tombstone_hwm) {
    Oid types[] = {OIDARRAYOID};
    Datum values[] = {relids};
    RunLatest(
        "SELECT (SELECT pg_catalog.max(hwm) FROM fencing.table_hwm"
        "         WHERE relid OPERATOR(pg_catalog.=) ANY ($1)),"
        "       (SELECT pg_catalog.max(hwm) FROM fencing.row_tombstone"
        "         WHERE relid OPERATOR(pg_catalog.=) ANY ($1))",
        1, types, values);
    bool table_null, tombstone_null;
    *table_hwm =
        DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &table_null));
    *tombstone_hwm = DatumGetInt64(
        SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &tombstone_null));
    *has_table = !table_null;
    *has_tombstone = !tombstone_null;
}

void MergeTombstones(Datum from_relids, Oid to) {
    Oid types[] = {OIDOID, OIDARRAYOID};
    Datum values[] = {ObjectIdGetDatum(to), from_relids};
    RunLatest(
        "INSERT INTO fencing.row_tombstone AS t (relid, key, hwm)"
        " SELECT $1, key, pg_catalog.max(hwm) FROM fencing.row_tombstone"
        "  WHERE relid OPERATOR(pg_catalog.=) ANY ($2) GROUP BY key"
        " ON CONFLICT (relid, key) DO UPDATE SET hwm = GREATEST(t.hwm, excluded.hwm)",
        2, types, values);
    NoteHwmRaised();
}

void MergeTableHwm(Oid relid, Token hwm) {
    Oid types[] = {OIDOID, INT8OID};
    Datum values[] = {ObjectIdGetDatum(relid), Int64GetDatum(hwm)};
    // A raise like any other: ATTACH PARTITION does not stop the table's
    // writers, so it waits for those admitted at the HWM (pg/hwm/lock.hpp).
    LOCKTAG tag;
    TableHwmLockTag(&tag, relid);
    LockHwmExclusive(&tag);
    RunInternalSql(
        "INSERT INTO fencing.table_hwm AS t (relid, hwm) VALUES ($1, $2)"
        " ON CONFLICT (relid) DO UPDATE SET hwm = GREATEST(t.hwm, excluded.hwm)",
        2, types, values, nullptr, false);
    UnlockHwmExclusive(&tag);
    NoteHwmRaised();
}

void CopyStoredHwms(Oid from, Oid to) {
    Oid types[] = {OIDOID, OIDOID};
    Datum values[] = {ObjectIdGetDatum(from), ObjectIdGetDatum(to)};
    RunLatest(
        "INSERT INTO fencing.row_tombstone AS t (relid, key, hwm)"
        " SELECT $2, key, hwm FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) $1"
        " ON CONFLICT (relid, key) DO UPDATE SET hwm = GREATEST(t.hwm, excluded.hwm)",
        2, types, values);
    RunLatest(
        "INSERT INTO fencing.table_hwm AS t (relid, hwm)"
        " SELECT $2, hwm FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) $1"
        " ON CONFLICT (relid) DO UPDATE SET hwm = GREATEST(t.hwm, excluded.hwm)",
        2, types, values);
    NoteHwmRaised();
}

void DropStoredHwms(Datum relids) {
    Oid types[] = {OIDARRAYOID};
    Datum values[] = {relids};
    RunInternalSql("DELETE FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) ANY ($1)",
                   1, types, values, nullptr, false);
    RunInternalSql("DELETE FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) ANY ($1)", 1,
                   types, values, nullptr, false);
}

int64 ResetTombstones(Oid relid, Datum key, const char *target, const char *caller) {
    RefuseResetOnSubscriber("row_tombstone", "reset tombstones");
    if (key == (Datum)0) {
        Oid types[] = {OIDOID};
        Datum values[] = {ObjectIdGetDatum(relid)};
        return ResetAndLog(
            "DELETE FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) $1"
            " RETURNING key::pg_catalog.text AS key, hwm",
            1, types, values, target, caller);
    }
    Oid types[] = {OIDOID, TEXTARRAYOID};
    Datum values[] = {ObjectIdGetDatum(relid), key};
    return ResetAndLog(
        "DELETE FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) $1"
        " AND key OPERATOR(pg_catalog.=) $2 RETURNING key::pg_catalog.text AS key, hwm",
        2, types, values, target, caller);
}

int64 ResetResourceHwm(const char *name_space, const char *resource, const char *target,
                       const char *caller) {
    RefuseResetOnSubscriber("resource_hwm", "reset a resource's high-water mark");
    Oid types[] = {TEXTOID, TEXTOID};
    Datum values[] = {CStringGetTextDatum(name_space), CStringGetTextDatum(resource)};
    return ResetAndLog(
        "DELETE FROM fencing.resource_hwm WHERE namespace OPERATOR(pg_catalog.=) $1"
        " AND resource OPERATOR(pg_catalog.=) $2 RETURNING resource AS key, hwm",
        2, types, values, target, caller);
}

int64 ResetTableHwm(Oid relid, const char *target, const char *caller) {
    RefuseResetOnSubscriber("table_hwm", "reset a table's high-water mark");
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    return ResetAndLog(
        "DELETE FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) $1"
        " RETURNING NULL::pg_catalog.text AS key, hwm",
        1, types, values, target, caller);
}

namespace {

// For an HWM table not of the direct path's shape (an index added, another
// access method): waits for every transaction writing any of its rows, which
// is coarser but sure.
void WaitForAllWriters(const DirectTable *t) {
    Oid nsp = get_namespace_oid("fencing", true);
    Oid relid = OidIsValid(nsp) ? get_relname_relid(t->name, nsp) : InvalidOid;
    if (OidIsValid(relid)) {
        LockRelationOid(relid, ShareLock);
        UnlockRelationOid(relid, ShareLock);
    }
}

}  // namespace

void HoldTableHwm(Oid relid) {
    LOCKTAG tag;
    TableHwmLockTag(&tag, relid);
    Datum key[] = {ObjectIdGetDatum(relid)};
    DirectAccess a;
    if (!OpenDirectHeap(&table_direct, AccessShareLock, key, &a)) {
        // Every raise of this shape takes the lock exclusively until its
        // statements are done (CheckAndRaiseViaSpi): share it, then wait for
        // those that let it go and have not committed yet.
        LockHwmShared(&tag);
        WaitForAllWriters(&table_direct);
        return;
    }
    OpenIndex(&a);
    TupleTableSlot *slot = table_slot_create(a.rel, nullptr);
    for (;;) {
        LockHwmShared(&tag);
        TransactionId writer =
            IndexWriter(a.rel, a.index, a.keys, a.scan_nkeys, slot, 0, nullptr, nullptr);
        if (!TransactionIdIsValid(writer))
            break;
        // As SettledAtHwm: not holding the lock while waiting, which the
        // writer's transaction may ask for again.
        UnlockHwmShared(&tag);
        WaitForWriter(writer);
    }
    ExecDropSingleTupleTableSlot(slot);
    CloseDirect(&a);
}

void WaitForIndexWriters(Relation rel, Relation index, ScanKey keys, int nkeys) {
    // Wait for each writer, then look again.
    TupleTableSlot *slot = table_slot_create(rel, nullptr);
    for (;;) {
        TransactionId writer = IndexWriter(rel, index, keys, nkeys, slot, 0, nullptr, nullptr);
        if (!TransactionIdIsValid(writer))
            break;
        WaitForWriter(writer);
    }
    ExecDropSingleTupleTableSlot(slot);
}

// One dirty-snapshot look at the key's index entries per round, as the unique
// check does, until no other transaction is writing the key's tombstone; the
// value that last round read (the committed version, or this transaction's
// own; the highest, as IndexWriter keeps it) is the answer. It is what
// "wait for the writers, then read with the latest snapshot" would return:
//   * a version whose writer (inserting, raising, or deleting it: a reset)
//     is still in flight is never read; the round waits for that writer and
//     looks again, so its commit or abort decides, as after the wait;
//   * with no writer in flight, the dirty snapshot sees exactly the versions
//     whose inserter committed and whose deleter did not, or that this
//     transaction wrote (RaiseTombstone's SPI statement advances the command
//     counter, so a snapshot taken now would see them too): the latest
//     committed state, which is what GetLatestSnapshot() would show.
//     Under REPEATABLE READ as well: a dirty snapshot ignores the
//     transaction's snapshot, as the latest snapshot does;
//   * a writer that comes after the round passed the key (which the
//     separate read saw only if it also committed before that read) finds
//     this transaction's row holding the key, which the caller has inserted
//     into the table's primary key index: a DELETE of the key cannot see the
//     row before this transaction commits, and fencing_advance() waits for
//     it (WaitForKeyWritersOf) and then raises the committed row.
// The one scan replaces the wait's last (writer-free) scan and the read.
// Through the lookup index (a hash index) the rows of other keys with the
// same hash value are skipped, their writers not waited for; "passed the key"
// is then the scan of the lookup index's entries, which every tombstone write
// (one SQL statement) has made before it returns, as it has the primary
// key's.
bool TombstoneAfterWriters(Oid home_relid, Datum key, Token *hwm) {
    Datum values[] = {ObjectIdGetDatum(home_relid), key};
    DirectAccess a;
    if (!OpenDirectHeap(&tombstone_direct, AccessShareLock, values, &a)) {
        WaitForAllWriters(&tombstone_direct);
        return LookupTombstoneInSession(home_relid, key, hwm);
    }
    const DirectAccess *recheck = OpenTombstoneIndex(&a, home_relid, key);
    TupleTableSlot *slot = table_slot_create(a.rel, nullptr);
    bool found = false;
    Token value = 0;
    for (;;) {
        TransactionId writer = IndexWriter(a.rel, a.index, a.keys, a.scan_nkeys, slot, a.hwm_attnum,
                                           &found, &value, nullptr, recheck);
        if (!TransactionIdIsValid(writer))
            break;
        WaitForWriter(writer);
    }
    ExecDropSingleTupleTableSlot(slot);
    CloseDirect(&a);
    if (found)
        *hwm = value;
    return found;
}

}  // namespace fencing::pg
