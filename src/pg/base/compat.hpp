// Every difference between the PostgreSQL major versions the extension builds
// against (15 to 19) lives here, as a small function with one meaning on all
// of them. No other file tests PG_VERSION_NUM.
//
// Tested on 15, 17, 18 and 19. 16 compiles from the same guards, written from
// PostgreSQL's release notes and source history, but no test runs on it.
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "access/genam.h"
#include "access/heapam.h"
#include "access/tableam.h"
#include "access/tupdesc.h"
#include "nodes/bitmapset.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "catalog/pg_class.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "postmaster/bgworker.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#if PG_VERSION_NUM >= 160000
#include "utils/guc_hooks.h"
#else
#include "replication/syncrep.h"
#endif
#if PG_VERSION_NUM >= 170000
#include "storage/procarray.h"
#else
#include "storage/sinvaladt.h"
#endif
#if PG_VERSION_NUM < 190000
#include "commands/dbcommands.h"  // get_database_name (19: utils/lsyscache.h)
#endif
#include "catalog/pg_publication.h"
}

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 200000
#error "fencing builds against PostgreSQL 15 to 19"
#endif

// The module's magic block (module.cpp): from 18, PG_MODULE_MAGIC_EXT also
// names the module and its version, shown by pg_get_loaded_modules().
// FENCING_VERSION is the control file's default_version (the Makefile).
#if PG_VERSION_NUM >= 180000
#define FENCING_MODULE_MAGIC PG_MODULE_MAGIC_EXT(.name = "fencing", .version = FENCING_VERSION)
#else
#define FENCING_MODULE_MAGIC PG_MODULE_MAGIC
#endif

// Whether a statement writes relid (INSERT/UPDATE/DELETE/MERGE): 19 keeps
// the result relations' range-table indexes in a Bitmapset.
inline bool WritesRelation(const PlannedStmt *stmt, Oid relid) {
#if PG_VERSION_NUM >= 190000
    for (int i = bms_next_member(stmt->resultRelationRelids, -1); i >= 0;
         i = bms_next_member(stmt->resultRelationRelids, i))
        if (rt_fetch(i, stmt->rtable)->relid == relid)
            return true;
#else
    ListCell *lc;
    foreach (lc, stmt->resultRelations)
        if (rt_fetch(lfirst_int(lc), stmt->rtable)->relid == relid)
            return true;
#endif
    return false;
}

// A column's cached offset in a tuple (-1: not known): 18 moved attcacheoff
// from pg_attribute's form to the tuple descriptor's CompactAttribute.
inline int AttrCacheOffset(TupleDesc desc, int index) {
#if PG_VERSION_NUM >= 180000
    return TupleDescCompactAttr(desc, index)->attcacheoff;
#else
    return TupleDescAttr(desc, index)->attcacheoff;
#endif
}

// ExecutorRun and its hook: 18 dropped the execute_once argument. The
// parameter list of a hook (names given) and a call of the next one; the
// expansion site includes executor/executor.h.
#if PG_VERSION_NUM >= 180000
#define FENCING_EXECUTOR_RUN_PARAMS(query, direction, count, once) \
    QueryDesc *query, ScanDirection direction, uint64 count
#define FENCING_CALL_EXECUTOR_RUN(fn, query, direction, count, once) fn(query, direction, count)
#else
#define FENCING_EXECUTOR_RUN_PARAMS(query, direction, count, once) \
    QueryDesc *query, ScanDirection direction, uint64 count, bool once
#define FENCING_CALL_EXECUTOR_RUN(fn, query, direction, count, once) \
    fn(query, direction, count, once)
#endif

namespace fencing::pg {

// Ownership checks: 16 folded the per-catalog functions into
// object_ownercheck(class, oid, role).
inline bool OwnsObject(Oid class_id, Oid object, Oid role) {
#if PG_VERSION_NUM >= 160000
    return object_ownercheck(class_id, object, role);
#else
    switch (class_id) {
        case RelationRelationId:
            return pg_class_ownercheck(object, role);
        case TypeRelationId:
            return pg_type_ownercheck(object, role);
        case NamespaceRelationId:
            return pg_namespace_ownercheck(object, role);
        default:
            elog(ERROR, "fencing: no ownership check for catalog %u", class_id);
    }
    return false;
#endif
}

inline bool OwnsRelation(Oid relid, Oid role) {
    return OwnsObject(RelationRelationId, relid, role);
}
inline bool OwnsType(Oid type, Oid role) {
    return OwnsObject(TypeRelationId, type, role);
}
inline bool OwnsNamespace(Oid nsp, Oid role) {
    return OwnsObject(NamespaceRelationId, nsp, role);
}

// The relation's current storage file number (16 renamed RelFileNode to
// RelFileLocator). A rewrite (VACUUM FULL, CLUSTER, TRUNCATE) changes it.
inline Oid RelationStorageNumber(Relation rel) {
#if PG_VERSION_NUM >= 160000
    return rel->rd_locator.relNumber;
#else
    return rel->rd_node.relNode;
#endif
}

// simple_heap_update: 16 returns which indexes need new entries through an
// out argument. The callers here insert index entries themselves for a
// version that is not heap-only, as on 15.
inline void SimpleHeapUpdate(Relation rel, ItemPointer otid, HeapTuple tuple) {
#if PG_VERSION_NUM >= 160000
    TU_UpdateIndexes update_indexes;
    simple_heap_update(rel, otid, tuple, &update_indexes);
#else
    simple_heap_update(rel, otid, tuple);
#endif
}

// index_beginscan: 18 takes an instrumentation struct (none here), 19 scan
// option flags (none: a plain index scan, as before).
inline IndexScanDesc BeginIndexScan(Relation heap, Relation index, Snapshot snapshot, int nkeys,
                                    int norderbys) {
#if PG_VERSION_NUM >= 190000
    return index_beginscan(heap, index, snapshot, nullptr, nkeys, norderbys, SO_NONE);
#elif PG_VERSION_NUM >= 180000
    return index_beginscan(heap, index, snapshot, nullptr, nkeys, norderbys);
#else
    return index_beginscan(heap, index, snapshot, nkeys, norderbys);
#endif
}

// A sequential scan of every row visible to snapshot, no scan keys: 19's
// table_beginscan takes caller scan option flags (none here).
inline TableScanDesc BeginTableScan(Relation rel, Snapshot snapshot) {
#if PG_VERSION_NUM >= 190000
    return table_beginscan(rel, snapshot, 0, nullptr, SO_NONE);
#else
    return table_beginscan(rel, snapshot, 0, nullptr);
#endif
}

// The cache id a syscache invalidation callback receives: an int up to 18,
// the enum SysCacheIdentifier from 19. Callbacks are declared
// void (Datum arg, SysCacheCallbackId cache, uint32 hash).
#if PG_VERSION_NUM >= 190000
using SysCacheCallbackId = SysCacheIdentifier;
#else
using SysCacheCallbackId = int;
#endif

// A shared-memory hash table of max_entries entries, all allocated at
// startup: 19 dropped ShmemInitHash's separate initial size (it was the same
// number here).
inline HTAB *InitSharedHash(const char *name, long max_entries, HASHCTL *info, int flags) {
#if PG_VERSION_NUM >= 190000
    return ShmemInitHash(name, max_entries, info, flags);
#else
    return ShmemInitHash(name, max_entries, max_entries, info, flags);
#endif
}

// A tuple descriptor built with CreateTemplateTupleDesc and
// TupleDescInitEntry, made ready for use: 19 requires TupleDescFinalize()
// before it is used (it computes cached attribute offsets); earlier
// versions have nothing to do.
inline void FinishTupleDesc(TupleDesc desc) {
#if PG_VERSION_NUM >= 190000
    TupleDescFinalize(desc);
#else
    (void)desc;
#endif
}

// The flags of a background worker that connects to one database and does
// not stand in the way of DROP DATABASE or ALTER DATABASE of it: 19 lets the
// server terminate such a worker (BGWORKER_INTERRUPTIBLE), as it does
// regular backends; up to 18 no flag exists, and such a command waits for,
// or fails on, the connected worker as it does on any other session.
constexpr int kDatabaseWorkerFlags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION
#if PG_VERSION_NUM >= 190000
                                     | BGWORKER_INTERRUPTIBLE
#endif
    ;

// The Datum of a null pointer (a trigger's "skip this row", a void result).
// 19's PointerGetDatum checks its argument is a pointer with
// "true ? (X) : NULL", which C++ refuses for nullptr (NULL is an integer in
// g++), so no caller writes NullPointerDatum().
inline Datum NullPointerDatum() {
    return PointerGetDatum(static_cast<void *>(nullptr));
}

// The primary key index, and InvalidOid for a deferrable one, as 15 has it:
// from 18 on the relcache records deferrable primary keys too, and a
// deferrable key cannot identify a row at the moment its guard runs.
inline Oid PrimaryKeyIndex(Relation rel) {
#if PG_VERSION_NUM >= 180000
    return RelationGetPrimaryKeyIndex(rel, false);
#else
    return RelationGetPrimaryKeyIndex(rel);
#endif
}

// The primary key's columns, under the same rule as PrimaryKeyIndex: the
// relcache's own bitmap once computed, else a copy; nullptr when the table
// has no (immediate) primary key.
inline const Bitmapset *PrimaryKeyColumns(Relation rel) {
#if PG_VERSION_NUM >= 180000
    if (!OidIsValid(PrimaryKeyIndex(rel)))
        return nullptr;
#endif
#if PG_VERSION_NUM >= 160000
    // 16 dropped rd_indexattr, the "bitmaps computed" marker: rd_attrsvalid.
    return rel->rd_attrsvalid ? rel->rd_pkattr
                              : RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_PRIMARY_KEY);
#else
    return rel->rd_indexattr != nullptr
               ? rel->rd_pkattr
               : RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_PRIMARY_KEY);
#endif
}

// This backend's local transaction id (17 moved it into MyProc->vxid).
inline LocalTransactionId CurrentLocalTransactionId() {
#if PG_VERSION_NUM >= 170000
    return MyProc->vxid.lxid;
#else
    return MyProc->lxid;
#endif
}

// The local transaction id a process is running (17 moved it into proc->vxid).
inline LocalTransactionId ProcLocalTransactionId(const PGPROC *proc) {
#if PG_VERSION_NUM >= 170000
    return proc->vxid.lxid;
#else
    return proc->lxid;
#endif
}

// The process running a virtual transaction, or nullptr (17 replaced
// backend ids with proc numbers).
inline PGPROC *ProcOfVirtualTransaction(const VirtualTransactionId &vxid) {
#if PG_VERSION_NUM >= 170000
    return ProcNumberGetProc(vxid.procNumber);
#else
    return BackendIdGetProc(vxid.backendId);
#endif
}

// A check hook's "extra": from 16 on PostgreSQL frees it with guc_free(),
// which is pfree() in its GUC memory context, so it must come from
// guc_malloc(); 15 frees it with free(). nullptr when out of memory.
inline void *AllocateGucExtra(size_t size) {
#if PG_VERSION_NUM >= 160000
    return guc_malloc(LOG, size);
#else
    return malloc(size);
#endif
}

// A setting's record by name, or nullptr (16 exported find_option and
// dropped the array-length accessor).
inline config_generic *FindSettingRecord(const char *name) {
#if PG_VERSION_NUM >= 160000
    return find_option(name, false, true, ERROR);
#else
    config_generic **all = get_guc_variables();
    int n = GetNumConfigOptions();
    for (int i = 0; i < n; ++i)
        if (pg_strcasecmp(all[i]->name, name) == 0)
            return all[i];
    return nullptr;
#endif
}

// Whether this transaction holds any lock on the relation (17 gave
// LockHeldByMe an "or stronger" argument).
inline bool RelationLockedByMe(Oid relid) {
    LOCKTAG tag;
    SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
#if PG_VERSION_NUM >= 170000
    return LockHeldByMe(&tag, AccessShareLock, true);
#else
    for (LOCKMODE mode = AccessShareLock; mode <= AccessExclusiveLock; ++mode)
        if (LockHeldByMe(&tag, mode))
            return true;
    return false;
#endif
}

// The search path of the extension's internal session: pg_catalog, and the
// temporary schema never ahead of it. 15 and 16 push an override (cheap, and
// invisible to SHOW); 17 removed overrides, so there a GUC nest level sets
// search_path to "pg_catalog, pg_temp" (functions and operators are never
// looked up in pg_temp) and is popped at the end, or by abort.
struct SearchPathPin {
    int guc_nest_level;
};

inline void PinCatalogSearchPath(SearchPathPin *pin) {
#if PG_VERSION_NUM >= 170000
    pin->guc_nest_level = NewGUCNestLevel();
    RestrictSearchPath();
#else
    pin->guc_nest_level = 0;
    OverrideSearchPath path;
    path.schemas = NIL;
    path.addCatalog = true;
    path.addTemp = false;
    path.generation = 0;
    PushOverrideSearchPath(&path);
#endif
}

inline void UnpinCatalogSearchPath(const SearchPathPin *pin) {
#if PG_VERSION_NUM >= 170000
    AtEOXact_GUC(true, pin->guc_nest_level);
#else
    (void)pin;
    PopOverrideSearchPath();
#endif
}

// The publications that name relid itself (19 also has FOR ALL TABLES ...
// EXCEPT, whose exclusions it lists apart).
inline List *PublicationsNamingTable(Oid relid) {
#if PG_VERSION_NUM >= 190000
    return GetRelationIncludedPublications(relid);
#else
    return GetRelationPublications(relid);
#endif
}

}  // namespace fencing::pg
