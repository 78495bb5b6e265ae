#include "pg/catalog/policy_store.hpp"

#include "pg/base/internal_access.hpp"
#include "pg/types/token_type.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/xact.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace fencing::pg {

bool ReadProtectedRow(Oid relid, ProtectedRow *row) {
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    RunInternalSql(
        "SELECT token_column::pg_catalog.text, scope, resource_column::pg_catalog.text,"
        " resource_namespace,"
        " on_stale, strict, require_token FROM fencing.protected"
        " WHERE relid OPERATOR(pg_catalog.=) $1",
        1, types, values, nullptr, false);  // not read-only: see this command's own writes
    if (SPI_processed == 0)
        return false;
    HeapTuple t = SPI_tuptable->vals[0];
    TupleDesc d = SPI_tuptable->tupdesc;
    auto text_at = [&](int col) -> const char * {
        char *v = SPI_getvalue(t, d, col);
        return v != nullptr ? v : "";
    };
    row->relid = relid;
    strlcpy(row->token_column, text_at(1), NAMEDATALEN);
    if (!ParseScope(text_at(2), &row->scope))
        row->scope = Scope::kRow;
    strlcpy(row->resource_column, text_at(3), NAMEDATALEN);
    // Outlives SPI_finish: allocated in the caller's memory context.
    const char *name_space = text_at(4);
    row->resource_namespace = static_cast<char *>(SPI_palloc(strlen(name_space) + 1));
    strcpy(row->resource_namespace, name_space);
    if (!ParseOnStale(text_at(5), &row->on_stale))
        row->on_stale = OnStale::kError;
    row->strict = strcmp(text_at(6), "t") == 0;
    row->require_token = strcmp(text_at(7), "t") == 0;
    return true;
}

List *ProtectedRelids() {
    MemoryContext caller = CurrentMemoryContext;
    InternalSession access;
    BeginInternal(&access);
    RunInternalSql(
        "SELECT relid::pg_catalog.oid FROM fencing.protected"
        " ORDER BY relid::pg_catalog.oid",
        0, nullptr, nullptr, nullptr, true);
    List *relids = NIL;
    for (uint64 i = 0; i < SPI_processed; ++i) {
        bool isnull;
        Datum d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
        MemoryContext spi = MemoryContextSwitchTo(caller);
        relids = lappend_oid(relids, DatumGetObjectId(d));
        MemoryContextSwitchTo(spi);
    }
    EndInternal(&access);
    return relids;
}

bool RequireTokenByDefault() {
    RunInternalSql(
        "SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid) OPERATOR(pg_catalog.=) 'false'"
        " FROM pg_catalog.pg_attrdef d JOIN pg_catalog.pg_attribute a"
        " ON a.attrelid OPERATOR(pg_catalog.=) d.adrelid AND a.attnum OPERATOR(pg_catalog.=) "
        "d.adnum"
        " WHERE d.adrelid OPERATOR(pg_catalog.=) 'fencing.protected'::pg_catalog.regclass"
        " AND a.attname OPERATOR(pg_catalog.=) 'require_token'",
        0, nullptr, nullptr, nullptr, true);
    if (SPI_processed == 0)
        return true;
    char *off = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
    return off == nullptr || strcmp(off, "t") != 0;
}

void WriteProtectedRow(const ProtectedRow &row) {
    Oid types[] = {OIDOID, NAMEOID, TEXTOID, NAMEOID, TEXTOID, TEXTOID, BOOLOID, BOOLOID};
    bool resource = row.scope == Scope::kResource;
    Datum values[] = {ObjectIdGetDatum(row.relid),
                      CStringGetDatum(row.token_column),
                      CStringGetTextDatum(ScopeName(row.scope)),
                      CStringGetDatum(row.resource_column),
                      CStringGetTextDatum(row.resource_namespace),
                      CStringGetTextDatum(OnStaleName(row.on_stale)),
                      BoolGetDatum(row.strict),
                      BoolGetDatum(row.require_token)};
    NameData token_name, resource_name;
    namestrcpy(&token_name, row.token_column);
    namestrcpy(&resource_name, row.resource_column);
    values[1] = NameGetDatum(&token_name);
    values[3] = NameGetDatum(&resource_name);
    char nulls[] = "        ";
    if (!resource)
        nulls[3] = nulls[4] = 'n';
    RunInternalSql(
        "INSERT INTO fencing.protected AS p (relid, token_column, scope, resource_column,"
        " resource_namespace, on_stale, strict, require_token)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        " ON CONFLICT (relid) DO UPDATE SET token_column = excluded.token_column,"
        " scope = excluded.scope, resource_column = excluded.resource_column,"
        " resource_namespace = excluded.resource_namespace, on_stale = excluded.on_stale,"
        " strict = excluded.strict, require_token = excluded.require_token",
        8, types, values, nulls, false);
}

void DeleteProtectedRow(Oid relid) {
    LockPolicyTree(relid);
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    RunInternalSql("DELETE FROM fencing.protected WHERE relid OPERATOR(pg_catalog.=) $1", 1, types,
                   values, nullptr, false);
}

namespace {

// Whether sql's first column (one row or none) reads differently with the
// latest snapshot than with the transaction's.
bool ChangedSinceSnapshot(const char *sql, Oid type, Datum value) {
    Oid types[] = {type};
    Datum values[] = {value};
    SPIPlanPtr plan = SPI_prepare(sql, 1, types);
    if (plan == nullptr)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("fencing: could not prepare internal statement: %s",
                               SPI_result_code_string(SPI_result))));
    char *seen[2];
    for (int latest = 0; latest < 2; ++latest) {
        int rc = latest ? SPI_execute_snapshot(plan, values, nullptr, GetLatestSnapshot(),
                                               InvalidSnapshot, true, false, 0)
                        : SPI_execute_plan(plan, values, nullptr, true, 0);
        if (rc < 0)
            ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                            errmsg("fencing: internal statement failed: %s",
                                   SPI_result_code_string(rc))));
        seen[latest] = SPI_processed > 0
                           ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)
                           : nullptr;
    }
    SPI_freeplan(plan);
    if (seen[0] == nullptr || seen[1] == nullptr)
        return seen[0] != seen[1];
    return strcmp(seen[0], seen[1]) != 0;
}

// A step that carries what a REPEATABLE READ snapshot saw, while a fenced
// write committed after it: 40001.
[[noreturn]] void ReportCarriedStateChanged(const char *what) {
    ereport(ERROR,
            (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
             errmsg("could not serialize access due to a concurrent fenced write"),
             errdetail("The fenced table that %s carries (its rows, tombstones, high-water "
                       "marks or policy) changed after this transaction's snapshot was taken; "
                       "carried as the snapshot sees it, an acknowledged write would be lost "
                       "or a high-water mark lowered.",
                       what),
             errhint("Retry the transaction (take the table's lock first, as its first "
                     "statement, so that its snapshot sees every write).")));
    pg_unreachable();
}

}  // namespace

// Whether a row of rel visible to scan_with is invisible to other.
bool RowsDiffer(Relation rel, Snapshot scan_with, Snapshot other) {
    TableScanDesc scan = BeginTableScan(rel, scan_with);
    TupleTableSlot *slot = table_slot_create(rel, nullptr);
    bool differ = false;
    while (!differ && table_scan_getnextslot(scan, ForwardScanDirection, slot)) {
        CHECK_FOR_INTERRUPTS();
        differ = !table_tuple_satisfies_snapshot(rel, slot, other);
    }
    ExecDropSingleTupleTableSlot(slot);
    table_endscan(scan);
    return differ;
}

bool ProtectedRowChangedSinceSnapshot(Oid relid) {
    return ChangedSinceSnapshot(
        "SELECT xmin::pg_catalog.text FROM fencing.protected"
        " WHERE relid OPERATOR(pg_catalog.=) $1",
        OIDOID, ObjectIdGetDatum(relid));
}

void RequireStateInSnapshot(const Oid *relids, int n, const char *what) {
    if (!IsolationUsesXactSnapshot() || n <= 0)
        return;
    const char *sql =
        "SELECT pg_catalog.md5(COALESCE(pg_catalog.string_agg(s.v, ',' ORDER BY s.v), ''))"
        " FROM (SELECT 'p' OPERATOR(pg_catalog.||) relid::pg_catalog.oid::pg_catalog.text"
        "   OPERATOR(pg_catalog.||) xmin::pg_catalog.text OPERATOR(pg_catalog.||) ctid::pg_catalog.text"
        "   FROM fencing.protected WHERE relid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)"
        " UNION ALL SELECT 't' OPERATOR(pg_catalog.||) relid::pg_catalog.oid::pg_catalog.text"
        "   OPERATOR(pg_catalog.||) xmin::pg_catalog.text OPERATOR(pg_catalog.||) ctid::pg_catalog.text"
        "   FROM fencing.row_tombstone WHERE relid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)"
        " UNION ALL SELECT 'h' OPERATOR(pg_catalog.||) relid::pg_catalog.oid::pg_catalog.text"
        "   OPERATOR(pg_catalog.||) xmin::pg_catalog.text OPERATOR(pg_catalog.||) ctid::pg_catalog.text"
        "   FROM fencing.table_hwm WHERE relid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)"
        " UNION ALL SELECT 'f' OPERATOR(pg_catalog.||) relid::pg_catalog.oid::pg_catalog.text"
        "   OPERATOR(pg_catalog.||) xmin::pg_catalog.text OPERATOR(pg_catalog.||) ctid::pg_catalog.text"
        "   FROM fencing.tombstone_floor WHERE relid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)"
        " ) s(v)";
    Datum *oids = static_cast<Datum *>(palloc(sizeof(Datum) * n));
    for (int i = 0; i < n; ++i)
        oids[i] = ObjectIdGetDatum(relids[i]);
    ArrayType *array = construct_array(oids, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT);
    if (ChangedSinceSnapshot(sql, OIDARRAYOID, PointerGetDatum(array)))
        ReportCarriedStateChanged(what);
}

void RequireRowsInSnapshot(Oid relid, const char *what) {
    if (!IsolationUsesXactSnapshot())
        return;
    List *rels = get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE
                     ? find_all_inheritors(relid, AccessShareLock, nullptr)
                     : list_make1_oid(relid);
    Snapshot xact = RegisterSnapshot(GetTransactionSnapshot());
    Snapshot latest = RegisterSnapshot(GetLatestSnapshot());
    bool differ = false;
    ListCell *lc;
    foreach (lc, rels) {
        if (differ || get_rel_relkind(lfirst_oid(lc)) != RELKIND_RELATION)
            continue;
        Relation rel = table_open(lfirst_oid(lc), NoLock);
        differ = RowsDiffer(rel, latest, xact) || RowsDiffer(rel, xact, latest);
        table_close(rel, NoLock);
    }
    UnregisterSnapshot(latest);
    UnregisterSnapshot(xact);
    if (differ)
        ReportCarriedStateChanged(what);
}

bool ExtensionFunctionInstalled(const char *signature) {
    Oid types[] = {TEXTOID};
    Datum values[] = {CStringGetTextDatum(signature)};
    RunInternalSql("SELECT pg_catalog.to_regprocedure($1) IS NOT NULL", 1, types, values,
                   nullptr, true);
    bool isnull = true;
    Datum found = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    return !isnull && DatumGetBool(found);
}

// The nearest partition ancestor that is protected, if any.
Oid ProtectedAncestor(Oid relid) {
    if (!get_rel_relispartition(relid))
        return InvalidOid;
    ListCell *lc;
    foreach (lc, get_partition_ancestors(relid)) {
        ProtectedRow row;
        if (ReadProtectedRow(lfirst_oid(lc), &row))
            return lfirst_oid(lc);
    }
    return InvalidOid;
}

// A protected table under relid in its partition tree (not relid itself), if any.
Oid ProtectedDescendant(Oid relid) {
    if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
        return InvalidOid;
    ListCell *lc;
    foreach (lc, find_all_inheritors(relid, NoLock, nullptr)) {
        ProtectedRow row;
        if (lfirst_oid(lc) != relid && ReadProtectedRow(lfirst_oid(lc), &row))
            return lfirst_oid(lc);
    }
    return InvalidOid;
}

// Names of the fencing_token columns of a relation (at most two are needed).
int TokenColumns(Oid relid, char first[NAMEDATALEN]) {
    Oid token_type = FencingTokenTypeOid();
    Relation rel = table_open(relid, AccessShareLock);
    TupleDesc desc = RelationGetDescr(rel);
    int count = 0;
    for (int i = 0; i < desc->natts; ++i) {
        Form_pg_attribute att = TupleDescAttr(desc, i);
        if (att->attisdropped || att->atttypid != token_type)
            continue;
        if (count++ == 0)
            strlcpy(first, NameStr(att->attname), NAMEDATALEN);
    }
    table_close(rel, AccessShareLock);
    return count;
}

Oid RelationOwner(Oid relid) {
    HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
    if (!HeapTupleIsValid(tup))
        elog(ERROR, "cache lookup failed for relation %u", relid);
    Oid owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup))->relowner;
    ReleaseSysCache(tup);
    return owner;
}

void LockPolicyTree(Oid relid) {
    char kind = get_rel_relkind(relid);
    if (kind == RELKIND_INDEX || kind == RELKIND_PARTITIONED_INDEX) {
        relid = IndexGetRelation(relid, true);
        kind = get_rel_relkind(relid);
    }
    Oid root = relid;
    if (OidIsValid(relid) && get_rel_relispartition(relid)) {
        List *ancestors = get_partition_ancestors(relid);
        if (ancestors != NIL)
            root = llast_oid(ancestors);
    } else if (kind != RELKIND_PARTITIONED_TABLE && kind != RELKIND_RELATION) {
        return;  // gone, or no table
    }
    // A plain table too: pg_restore -j runs a job's CREATE TRIGGER on it (the
    // table locked, then its policy row) beside the job loading
    // fencing.protected (its policy row, then the table for its guards).
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, root, 0, kPolicyTreeLockField4);
    (void)LockAcquire(&tag, ExclusiveLock, false, false);
}

}  // namespace fencing::pg
