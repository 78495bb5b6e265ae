#include "pg/base/internal_access.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "optimizer/cost.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "utils/resowner.h"
#include "utils/fmgroids.h"
#include "catalog/namespace.h"
#include "utils/inval.h"
#include "utils/syscache.h"
}

namespace fencing::pg {
namespace {

Oid cached_owner = InvalidOid;

// DROP/ALTER ROLE and REASSIGN OWNED all touch pg_authid; re-read the owner
// after any of them.
void ForgetOwner(Datum, SysCacheCallbackId, uint32) {
    cached_owner = InvalidOid;
}

// An extension's pg_extension row: its owner and schema.
bool ReadExtension(const char *name, Oid *owner, Oid *schema) {
    Oid ext = get_extension_oid(name, true);
    if (!OidIsValid(ext))
        return false;
    Relation rel = table_open(ExtensionRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(ext));
    SysScanDesc scan = systable_beginscan(rel, ExtensionOidIndexId, true, nullptr, 1, &key);
    HeapTuple tup = systable_getnext(scan);
    bool found = HeapTupleIsValid(tup);
    if (found) {
        auto *form = reinterpret_cast<Form_pg_extension>(GETSTRUCT(tup));
        *owner = form->extowner;
        *schema = form->extnamespace;
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return found;
}

}  // namespace

void RegisterInternalAccessCallbacks() {
    CacheRegisterSyscacheCallback(AUTHOID, ForgetOwner, 0);
}

Oid ExtensionOwner() {
    Oid schema;
    if (!OidIsValid(cached_owner) && !ReadExtension("fencing", &cached_owner, &schema))
        cached_owner = InvalidOid;
    return cached_owner;
}

Oid ExtensionSchema() {
    return ExtensionSchemaOf("fencing");
}

Oid ExtensionSchemaOid(bool missing_ok) {
    return get_namespace_oid("fencing", missing_ok);
}

Oid ExtensionSchemaOf(const char *extname) {
    Oid owner, schema;
    return ReadExtension(extname, &owner, &schema) ? schema : InvalidOid;
}

void BeginInternal(InternalSession *session) {
    Oid owner = ExtensionOwner();
    // Fail closed: without an owner there is nobody to act as.
    if (!OidIsValid(owner) || !SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(owner)))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("the fencing extension is not installed in this database, or its "
                               "owner role is gone")));
    if (SPI_connect() != SPI_OK_CONNECT)
        ereport(ERROR,
                (errcode(ERRCODE_INTERNAL_ERROR), errmsg("fencing: could not connect to SPI")));
    GetUserIdAndSecContext(&session->saved_user, &session->saved_context);
    SetUserIdAndSecContext(owner, session->saved_context | SECURITY_LOCAL_USERID_CHANGE |
                                      SECURITY_RESTRICTED_OPERATION);
    // pg_catalog first, the temporary schema never ahead of it; the same
    // path every time, so kept plans prepared under it match it again on the
    // next call and are not re-analysed. Unpinned by End, or by abort.
    PinCatalogSearchPath(&session->search_path);
}

void EndInternal(const InternalSession *session) {
    UnpinCatalogSearchPath(&session->search_path);
    SetUserIdAndSecContext(session->saved_user, session->saved_context);
    SPI_finish();
}

SPIPlanPtr PrepareKeptPlan(const char *sql, int nargs, const Oid *argtypes, int sqlstate,
                           const char *failure) {
    SPIPlanPtr plan = SPI_prepare(sql, nargs, const_cast<Oid *>(argtypes));
    if (plan == nullptr)
        ereport(ERROR,
                (errcode(sqlstate), errmsg("%s: %s", failure, SPI_result_code_string(SPI_result))));
    SPI_keepplan(plan);
    return plan;
}

SPIPlanPtr InternalPlan(InternalStatement *stmt) {
    if (stmt->plan == nullptr)
        stmt->plan = PrepareKeptPlan(stmt->sql, stmt->nargs, stmt->argtypes, ERRCODE_INTERNAL_ERROR,
                                     "fencing: could not prepare internal statement");
    return stmt->plan;
}

// Kept statements find their rows by key. Their generic plan is made from
// the table's statistics when first run, and a table that was small then (a
// new database, or one that retirement keeps small) would get a sequential
// scan, kept for every later call: each call would then read every entry.
// So they are planned, and run, with sequential scans disabled.
uint64 RunInternalStatement(InternalStatement *stmt, const Datum *values, const char *nulls) {
    bool saved_enable_seqscan = enable_seqscan;
    enable_seqscan = false;
    int rc = 0;
    PG_TRY();
    { rc = SPI_execute_plan(InternalPlan(stmt), const_cast<Datum *>(values), nulls, false, 0); }
    PG_FINALLY();
    { enable_seqscan = saved_enable_seqscan; }
    PG_END_TRY();
    if (rc < 0)
        ereport(ERROR,
                (errcode(ERRCODE_INTERNAL_ERROR),
                 errmsg("fencing: internal statement failed: %s", SPI_result_code_string(rc))));
    return SPI_processed;
}

uint64 RunInternalSql(const char *sql, int nargs, const Oid *types, const Datum *values,
                      const char *nulls, bool read_only) {
    int rc = SPI_execute_with_args(sql, nargs, const_cast<Oid *>(types),
                                   const_cast<Datum *>(values), nulls, read_only, 0);
    if (rc < 0)
        ereport(ERROR,
                (errcode(ERRCODE_INTERNAL_ERROR),
                 errmsg("fencing: internal statement failed: %s", SPI_result_code_string(rc))));
    return SPI_processed;
}

bool RunInSubTransaction(void (*work)(void *arg), void *arg, ErrorData **caught) {
    MemoryContext context = CurrentMemoryContext;
    ResourceOwner owner = CurrentResourceOwner;
    volatile bool ok = true;
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(context);
    PG_TRY();
    {
        work(arg);
        ReleaseCurrentSubTransaction();
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(context);
        *caught = CopyErrorData();
        FlushErrorState();
        RollbackAndReleaseCurrentSubTransaction();
        ok = false;
    }
    PG_END_TRY();
    MemoryContextSwitchTo(context);
    CurrentResourceOwner = owner;
    return ok;
}

}  // namespace fencing::pg
