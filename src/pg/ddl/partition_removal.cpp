// Rows leaving a row-scope fenced partition tree leave tombstones first (see
// partition_removal.hpp).
#include "pg/ddl/partition_removal.hpp"
#include "pg/ddl/copy_snapshot.hpp"
#include "pg/ddl/dropped_rows.hpp"

#include "core/policy.hpp"
#include "pg/guard/install.hpp"
#include "pg/guard/restored.hpp"
#include "pg/hwm/tombstones.hpp"
#include "pg/base/compat.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/catalog/policy_store.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/parsenodes.h"
#include "parser/parse_type.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace fencing::pg {

namespace {

// A leaf of going whose row-scope home is neither itself nor in going: its
// rows leave the home's tree without tombstones unless we write them.
bool LeavesHome(Oid leaf, const List *going, Policy *policy) {
    return get_rel_relkind(leaf) == RELKIND_RELATION && GuardPolicy(leaf, policy) &&
           policy->scope == Scope::kRow && policy->home_relid != leaf &&
           !list_member_oid(going, policy->home_relid);
}

// The plain and partitioned tables of pg_class whose OID column att equals
// value (relnamespace, relowner): a sequential scan, as DDL can afford.
List *TablesWhere(AttrNumber att, Oid value) {
    List *oids = NIL;
    Relation rel = table_open(RelationRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, att, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(value));
    SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, nullptr, 1, &key);
    HeapTuple tup;
    while (HeapTupleIsValid(tup = systable_getnext(scan))) {
        auto *form = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup));
        if (form->relkind == RELKIND_RELATION || form->relkind == RELKIND_PARTITIONED_TABLE)
            oids = lappend_oid(oids, form->oid);
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return oids;
}

// Every relation in tops and under them (partitions go with their parent).
List *WithInheritors(List *tops, LOCKMODE mode) {
    List *all = NIL;
    ListCell *lc;
    foreach (lc, tops)
        all = list_concat_unique_oid(all, find_all_inheritors(lfirst_oid(lc), mode, nullptr));
    return all;
}

bool MayDrop(Oid relid) {
    return OwnsRelation(relid, GetUserId()) || OwnsNamespace(get_rel_namespace(relid), GetUserId());
}

// The tables a DROP command names directly (before CASCADE), or NIL.
List *DroppedTables(Node *tree) {
    List *tops = NIL;
    ListCell *lc;
    if (IsA(tree, DropStmt)) {
        auto *stmt = castNode(DropStmt, tree);
        foreach (lc, stmt->objects) {
            if (stmt->removeType == OBJECT_TABLE) {
                Oid relid = RangeVarGetRelid(makeRangeVarFromNameList(castNode(List, lfirst(lc))),
                                             NoLock, true);
                if (OidIsValid(relid) && MayDrop(relid))
                    tops = lappend_oid(tops, relid);
            } else if (stmt->removeType == OBJECT_TYPE && stmt->behavior == DROP_CASCADE) {
                // A typed table (CREATE TABLE ... OF type) goes with its type.
                Oid type = LookupTypeNameOid(nullptr, castNode(TypeName, lfirst(lc)), true);
                ListCell *t;
                if (OidIsValid(type))
                    foreach (t, TablesWhere(Anum_pg_class_reloftype, type))
                        if (MayDrop(lfirst_oid(t)))
                            tops = lappend_oid(tops, lfirst_oid(t));
            } else if (stmt->removeType == OBJECT_ACCESS_METHOD &&
                       stmt->behavior == DROP_CASCADE) {
                // The tables of a table access method go with it.
                Oid am = get_am_oid(strVal(lfirst(lc)), true);
                ListCell *t;
                if (OidIsValid(am))
                    foreach (t, TablesWhere(Anum_pg_class_relam, am))
                        if (MayDrop(lfirst_oid(t)))
                            tops = lappend_oid(tops, lfirst_oid(t));
            } else if (stmt->removeType == OBJECT_SCHEMA) {
                Oid nsp = get_namespace_oid(strVal(lfirst(lc)), true);
                if (OidIsValid(nsp) && OwnsNamespace(nsp, GetUserId()))
                    tops = list_concat(tops, TablesWhere(Anum_pg_class_relnamespace, nsp));
            }
        }
    } else if (IsA(tree, DropOwnedStmt)) {
        foreach (lc, castNode(DropOwnedStmt, tree)->roles) {
            Oid role = get_rolespec_oid(static_cast<RoleSpec *>(lfirst(lc)), true);
            if (OidIsValid(role) && has_privs_of_role(GetUserId(), role))
                tops = list_concat(tops, TablesWhere(Anum_pg_class_relowner, role));
        }
    }
    return tops;
}

// The rows of removed's leaves that LeavesHome, tombstoned under their home
// (home: InvalidOid), or under home.
int64 TombstoneRows(Oid removed, const List *going, Oid home, bool *every_row = nullptr) {
    int64 written = 0;
    ListCell *lc;
    foreach (lc, find_all_inheritors(removed, NoLock, nullptr)) {
        Oid leaf = lfirst_oid(lc);
        Policy policy;
        bool row_leaf = get_rel_relkind(leaf) == RELKIND_RELATION && GuardPolicy(leaf, &policy) &&
                        policy.scope == Scope::kRow;
        if (OidIsValid(home) ? !row_leaf : !LeavesHome(leaf, going, &policy))
            continue;
        Relation rel = table_open(leaf, NoLock);  // locked by the caller
        bool leaf_every_row = true;
        written += TombstoneEveryRow(rel, OidIsValid(home) ? home : policy.home_relid,
                                     policy.token_attnum, &leaf_every_row);
        if (every_row != nullptr && !leaf_every_row)
            *every_row = false;
        table_close(rel, NoLock);
    }
    return written;
}

// Every fenced table in going keeps its policy and state under its name
// (fencing.keep_dropped_state), read now, while its catalog still stands.
void KeepDroppedState(List *going) {
    int n = list_length(going);
    Datum *oids = static_cast<Datum *>(palloc(sizeof(Datum) * (n > 0 ? n : 1)));
    for (int i = 0; i < n; ++i) oids[i] = ObjectIdGetDatum(list_nth_oid(going, i));
    ArrayType *array = construct_array(oids, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT);
    InternalSession access;
    BeginInternal(&access);
    // Before ALTER EXTENSION UPDATE to 1.6: a DROP deletes the state, as it did.
    if (!ExtensionFunctionInstalled("fencing.keep_dropped_state(oid,boolean)")) {
        EndInternal(&access);
        return;
    }
    Oid *relids = static_cast<Oid *>(palloc(sizeof(Oid) * (n > 0 ? n : 1)));
    for (int i = 0; i < n; ++i) relids[i] = list_nth_oid(going, i);
    RequireStateInSnapshot(relids, n, "this DROP (kept for a table that takes the name)");
    Datum *with_rows = static_cast<Datum *>(palloc(sizeof(Datum) * (n > 0 ? n : 1)));
    int n_with_rows = 0;
    for (int i = 0; i < n; ++i) {
        ProtectedRow row;
        if (!ReadProtectedRow(relids[i], &row))
            continue;
        RequireRowsInSnapshot(relids[i], "this DROP (kept for a table that takes the name)");
        // Judged when a table takes the name: a DROP for good loses nothing.
        const char *why = nullptr;
        if (RowsChangedSinceRead(relids[i], &why))
            KeepDroppedUnseenWrite(relids[i], why);
        if (KeepDroppedRows(relids[i], going))
            with_rows[n_with_rows++] = ObjectIdGetDatum(relids[i]);
    }
    for (int i = 0; i < n; ++i) {
        const char *mark = RestoredMark(relids[i]);
        if (mark != nullptr)
            KeepDroppedMark(
                quote_qualified_identifier(get_namespace_name(get_rel_namespace(relids[i])),
                                           get_rel_name(relids[i])),
                mark);
    }
    Oid types[] = {OIDARRAYOID, OIDARRAYOID};
    Datum values[] = {PointerGetDatum(array),
                      PointerGetDatum(construct_array(with_rows, n_with_rows, OIDOID, sizeof(Oid),
                                                      true, TYPALIGN_INT))};
    RunInternalSql(
        "SELECT fencing.keep_dropped_state(p.relid::pg_catalog.oid,"
        " p.relid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($2))"
        " FROM fencing.protected p"
        " WHERE p.relid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)",
        2, types, values, nullptr, false);
    EndInternal(&access);
}

}  // namespace

int64 TombstoneRowsUnder(Oid removed, Oid home) {
    return TombstoneRows(removed, NIL, home);
}

void BeforeDrop(Node *tree) {
    List *tops = DroppedTables(tree);
    if (tops == NIL)
        return;
    // The locks the DROP takes anyway, in its order (a partition's parent
    // first, as RangeVarCallbackForDropRelation and heap_drop_with_catalog
    // take it), taken before the tree is read: no partition is attached
    // under a dropped table after we look (an ATTACH in flight is waited
    // for, and its partition seen), no writer of the rows read below is in
    // flight, and none comes before the DROP commits. Then each named table
    // itself: find_all_inheritors locks only what is under it, and a writer
    // of the partition alone (its partition constraint cached, or a DELETE,
    // which checks none) holds no lock on the parent.
    ListCell *lc;
    foreach (lc, tops) {
        Oid relid = lfirst_oid(lc);
        if (get_rel_relispartition(relid)) {
            Oid parent = get_partition_parent(relid, true);
            if (OidIsValid(parent))
                LockRelationOid(parent, AccessExclusiveLock);
        }
    }
    foreach (lc, tops) LockRelationOid(lfirst_oid(lc), AccessExclusiveLock);
    List *going = WithInheritors(tops, AccessExclusiveLock);
    KeepDroppedState(going);
    bool any = false;
    foreach (lc, going) {
        Policy policy;
        any = any || LeavesHome(lfirst_oid(lc), going, &policy);
    }
    if (!any)
        return;
    int64 written = 0;
    bool every_row = true;
    foreach (lc, tops)
        if (!list_member_oid(going, get_rel_relispartition(lfirst_oid(lc))
                                        ? get_partition_parent(lfirst_oid(lc), true)
                                        : InvalidOid))
            written += TombstoneRows(lfirst_oid(lc), going, InvalidOid, &every_row);
    if (!every_row)
        ereport(NOTICE, (errmsg("fencing: the dropped rows of row-scope fenced partitions folded "
                                "into their fenced table's tombstone floor"),
                         errdetail("The highest token was read from an index on the token "
                                   "column; " INT64_FORMAT " row(s) were read before it.",
                                   written)));
    else if (written > 0)
        ereport(NOTICE, (errmsg("fencing: " INT64_FORMAT " dropped row(s) of row-scope fenced "
                                "partitions left their high-water marks under their fenced table",
                                written)));
}

}  // namespace fencing::pg
