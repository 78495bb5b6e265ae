#include "pg/hwm/store_shape.hpp"

#include "pg/hwm/store.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/genam.h"
#include "access/stratnum.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "nodes/primnodes.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

namespace fencing::pg {
namespace hwm {

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

Oid StoreRelid(const char *name) {
    Oid nsp = ExtensionSchemaOid(true);
    return OidIsValid(nsp) ? get_relname_relid(name, nsp) : InvalidOid;
}

namespace {

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

// Whether expr is array_append(<key column>, <relid column>::oid::text).
bool IsLookupExpression(Node *expr, AttrNumber relid_attnum, AttrNumber key_attnum) {
    if (!IsA(expr, FuncExpr))
        return false;
    auto *f = reinterpret_cast<FuncExpr *>(expr);
    if (f->funcid != F_ARRAY_APPEND || list_length(f->args) != 2)
        return false;
    auto *first = static_cast<Node *>(linitial(f->args));
    auto *second = static_cast<Node *>(lsecond(f->args));
    if (!IsA(first, Var) || reinterpret_cast<Var *>(first)->varattno != key_attnum)
        return false;
    if (!IsA(second, CoerceViaIO) || reinterpret_cast<CoerceViaIO *>(second)->resulttype != TEXTOID)
        return false;
    auto *arg = reinterpret_cast<Node *>(reinterpret_cast<CoerceViaIO *>(second)->arg);
    if (IsA(arg, RelabelType))
        arg = reinterpret_cast<Node *>(reinterpret_cast<RelabelType *>(arg)->arg);
    return IsA(arg, Var) && reinterpret_cast<Var *>(arg)->varattno == relid_attnum &&
           reinterpret_cast<Var *>(arg)->vartype == REGCLASSOID;
}

// The lookup index as the extension's script creates it: hash, valid, not
// partial, on the one expression array_append(key, relid::oid::text) of the
// primary key's columns (relid, key). Anything else under its name is another
// index.
bool LookupIndexOk(Oid index, AttrNumber relid_attnum, AttrNumber key_attnum) {
    // Dropped meanwhile (see OpenIndexIfExists): not the lookup index.
    Relation index_rel = OpenIndexIfExists(index);
    if (index_rel == nullptr)
        return false;
    bool ok = index_rel->rd_rel->relam == HASH_AM_OID && index_rel->rd_index->indisvalid &&
              index_rel->rd_index->indnkeyatts == 1 && index_rel->rd_index->indkey.values[0] == 0 &&
              RelationGetIndexPredicate(index_rel) == NIL;
    List *exprs = ok ? RelationGetIndexExpressions(index_rel) : NIL;
    ok = ok && list_length(exprs) == 1 &&
         IsLookupExpression(static_cast<Node *>(linitial(exprs)), relid_attnum, key_attnum);
    index_close(index_rel, AccessShareLock);
    return ok;
}

// The scan keys (key_eq, in index column order) and the HWM read assume the
// columns of the extension's CREATE TABLE: a primary key rebuilt on other
// columns, in another order or over retyped ones (a superuser's ALTER TABLE)
// would have the B-tree compare one type's datum as another (a crash): such a
// table takes the SPI path, which plans by name.
bool ColumnsAsCreated(const DirectTable *t, Relation rel) {
    TupleDesc desc = RelationGetDescr(rel);
    auto column_is = [desc](AttrNumber attnum, Oid type) {
        return attnum >= 1 && attnum <= desc->natts &&
               !TupleDescAttr(desc, attnum - 1)->attisdropped &&
               TupleDescAttr(desc, attnum - 1)->atttypid == type;
    };
    if (!column_is(t->hwm_attnum, INT8OID))
        return false;
    for (int i = 0; i < t->nkeys; ++i)
        if (!column_is(i + 1, t->key_type[i]))
            return false;
    return true;
}

// Whether the primary key index is on the key columns 1..nkeys, in order;
// sets t's key_attnum from it.
bool PrimaryKeyAsCreated(DirectTable *t, Oid index) {
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
    return keys_ok;
}

bool ResolveDirectTable(DirectTable *t) {
    if (OidIsValid(t->relid))
        return true;
    Oid relid = StoreRelid(t->name);
    if (!OidIsValid(relid))
        return false;
    Relation rel = table_open(relid, AccessShareLock);
    Oid index = PrimaryKeyIndex(rel);
    // The direct path maintains the primary key index only, and assumes the
    // heap access method: anything else (an index someone added, another
    // access method) takes the SPI path, which maintains every index.
    // A read-only table (tombstone_direct) may have any other index, its
    // lookup index among them.
    List *indexes = RelationGetIndexList(rel);
    Oid lookup = t->lookup_name != nullptr ? StoreRelid(t->lookup_name) : InvalidOid;
    int others = list_length(indexes) - 1;
    bool has_lookup = OidIsValid(lookup) && list_member_oid(indexes, lookup);
    bool direct_ok = rel->rd_rel->relam == HEAP_TABLE_AM_OID && (others == 0 || t->read_only) &&
                     ColumnsAsCreated(t, rel);
    table_close(rel, AccessShareLock);
    if (!OidIsValid(index) || !direct_ok || !PrimaryKeyAsCreated(t, index))
        return false;
    if (has_lookup && (t->nkeys != 2 || !LookupIndexOk(lookup, t->key_attnum[0], t->key_attnum[1])))
        return false;  // another index under its name: as any other index
    AttrNumber raised_at = get_attnum(relid, "raised_at");
    t->raised_at_attnum =
        raised_at != InvalidAttrNumber && get_atttype(relid, raised_at) == TIMESTAMPTZOID
            ? raised_at
            : 0;
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
// table's primary key index meanwhile (an extension update that rebuilds it,
// a superuser's ALTER TABLE, REINDEX CONCURRENTLY),
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
        // Copies: the callback may clear t while the table is opened (which
        // would then open OID 0: "could not open relation with OID 0").
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

}  // namespace

bool OpenDirectHeap(DirectTable *t, LOCKMODE mode, const Datum *key, DirectAccess *a) {
    Oid index_relid;
    Relation rel = OpenResolved(t, mode, &index_relid, &a->lookup_relid);
    if (rel == nullptr)
        return false;
    a->mode = mode;
    a->nkeys = t->nkeys;
    a->hwm_attnum = t->hwm_attnum;
    a->raised_at_attnum = t->raised_at_attnum;
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

}  // namespace hwm

void ForgetStoreTables(Oid relid) {
    for (hwm::DirectTable *t :
         {&hwm::resource_direct, &hwm::table_direct, &hwm::tombstone_direct}) {
        if (relid == InvalidOid || relid == t->relid || relid == t->index || relid == t->lookup) {
            t->relid = InvalidOid;
            t->index = InvalidOid;
            t->lookup = InvalidOid;
        }
    }
}

}  // namespace fencing::pg
