// Reading and resetting high-water marks from SQL:
//   fencing_high_water(target regclass, key jsonb)   anyone who may SELECT the table
//   fencing_resource_high_water(resource text, namespace text)  anyone
//   fencing_reset(target regclass, key jsonb)         the table's owner; logged
//   fencing_resource_reset(resource text, namespace text)       superusers; logged
#include "pg/boundary.hpp"
#include "pg/relation_args.hpp"
#include "pg/hwm_store.hpp"
#include "pg/json_args.hpp"
#include "pg/protect.hpp"
#include "pg/row_key.hpp"

extern "C" {
#include "access/table.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace fencing::pg {
namespace {

void Exec(const char *sql, int nargs, Oid *types, Datum *values) {
    int rc = SPI_execute_with_args(sql, nargs, types, values, nullptr, false, 0);
    if (rc < 0)
        elog(ERROR, "fencing: internal statement failed: %s", SPI_result_code_string(rc));
}

// Max of column 1 over the result rows, if any row has a non-NULL value.
bool MaxOfResult(Token *out) {
    bool any = false;
    for (uint64 i = 0; i < SPI_processed; ++i) {
        bool isnull;
        Datum d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
        if (isnull)
            continue;
        Token v = DatumGetInt64(d);
        if (!any || v > *out)
            *out = v;
        any = true;
    }
    return any;
}

Oid RequireProtectedTarget(FunctionCallInfo fcinfo, ProtectedRow *row) {
    Oid relid = ExistingRelationArg(fcinfo, 0, "target");
    if (!ReadProtectedRow(relid, row))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("table %s is not protected by fencing", RelName(relid))));
    return relid;
}

// Row scope: the primary key values named by key, converted to column types.
struct KeyValues {
    PrimaryKey pk;
    Oid pkindex;
    Oid types[32];
    Datum values[32];
};

void ReadRowKey(Oid relid, Jsonb *key, KeyValues *out) {
    Members m;
    ReadMembers(key, "key", false, &m);
    Relation rel = table_open(relid, AccessShareLock);
    if (!GetPrimaryKey(rel, &out->pk)) {
        table_close(rel, AccessShareLock);
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("table %s has no primary key, so rows have no durable key",
                               RelName(relid))));
    }
    out->pkindex = RelationGetPrimaryKeyIndex(rel);
    TupleDesc desc = RelationGetDescr(rel);
    for (int i = 0; i < out->pk.natts; ++i) {
        Form_pg_attribute att = TupleDescAttr(desc, out->pk.attnums[i] - 1);
        int found = -1;
        for (int j = 0; j < m.count; ++j)
            if (strcmp(m.names[j], NameStr(att->attname)) == 0)
                found = j;
        if (found < 0 || m.count != out->pk.natts) {
            table_close(rel, AccessShareLock);
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("key must name exactly the primary key columns of %s",
                                   RelName(relid))));
        }
        bool isnull;
        out->types[i] = att->atttypid;
        out->values[i] = JsonToColumn(m.values[found], att->atttypid, att->atttypmod,
                                      NameStr(att->attname), &isnull);
        if (isnull) {
            table_close(rel, AccessShareLock);
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("key column \"%s\" must not be null", NameStr(att->attname))));
        }
    }
    table_close(rel, AccessShareLock);
}

// Resource scope: the resource named by key, as the guard spells it (the
// column type's text output).
char *ReadResourceKey(Oid relid, const ProtectedRow &row, Jsonb *key) {
    Members m;
    ReadMembers(key, "key", false, &m);
    if (m.count != 1 || strcmp(m.names[0], row.resource_column) != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("key must be {\"%s\": <resource>} for table %s", row.resource_column,
                               RelName(relid))));
    AttrNumber attnum = get_attnum(relid, row.resource_column);
    Oid type, collation;
    int32 typmod;
    get_atttypetypmodcoll(relid, attnum, &type, &typmod, &collation);
    bool isnull;
    Datum d = JsonToColumn(m.values[0], type, typmod, row.resource_column, &isnull);
    if (isnull)
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("resource must not be null")));
    return ResourceKeyText(type, d);
}

Datum HighWaterOfTable(FunctionCallInfo fcinfo) {
    InternalAccess access;
    SPI_connect();
    ProtectedRow row;
    Oid relid;
    {
        // Privilege check as the caller. The HWM tables are then read past
        // RLS; a live row is read as the table's owner (see below).
        if (!PG_ARGISNULL(0) &&
            pg_class_aclcheck(PG_GETARG_OID(0), GetUserId(), ACL_SELECT) != ACLCHECK_OK)
            aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(PG_GETARG_OID(0)));
    }
    BeginInternalAccess(&access);
    relid = RequireProtectedTarget(fcinfo, &row);
    Token hwm = 0;
    bool found = false;
    switch (row.scope) {
        case Scope::kRow: {
            if (PG_ARGISNULL(1))
                ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                errmsg("table %s is fenced per row: pass the row's primary key",
                                       RelName(relid))));
            KeyValues k;
            ReadRowKey(relid, PG_GETARG_JSONB_P(1), &k);
            // The live row's token ...
            StringInfoData sql;
            initStringInfo(&sql);
            appendStringInfo(&sql, "SELECT %s::pg_catalog.int8 FROM %s WHERE ",
                             quote_identifier(row.token_column), RelName(relid));
            Relation rel = table_open(relid, AccessShareLock);
            Oid rel_owner = rel->rd_rel->relowner;
            Oid argtypes[32];
            AppendKeyPredicate(&sql, rel, k.pk, k.pkindex, argtypes);
            table_close(rel, AccessShareLock);
            // The user table is read as its owner in a restricted security
            // context (as ANALYZE does), not as the superuser that reads
            // fencing.*: no user code reached from the scan runs privileged.
            Oid internal_user;
            int internal_context;
            GetUserIdAndSecContext(&internal_user, &internal_context);
            SetUserIdAndSecContext(rel_owner, internal_context | SECURITY_LOCAL_USERID_CHANGE |
                                                  SECURITY_RESTRICTED_OPERATION);
            int rc =
                SPI_execute_with_args(sql.data, k.pk.natts, argtypes, k.values, nullptr, true, 1);
            SetUserIdAndSecContext(internal_user, internal_context);
            if (rc < 0)
                elog(ERROR, "fencing: HWM lookup failed: %s", SPI_result_code_string(rc));
            found = MaxOfResult(&hwm);
            // ... or the tombstone a deleted row left, whichever is higher.
            Token tombstone;
            if (LookupTombstone(relid, TombstoneKey(k.pk.natts, k.types, k.values), &tombstone) &&
                (!found || tombstone > hwm)) {
                hwm = tombstone;
                found = true;
            }
            break;
        }
        case Scope::kResource: {
            if (PG_ARGISNULL(1))
                ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                errmsg("table %s is fenced per resource: pass {\"%s\": <resource>}",
                                       RelName(relid), row.resource_column)));
            Oid types[] = {TEXTOID, TEXTOID};
            Datum values[] = {
                CStringGetTextDatum(row.resource_namespace),
                CStringGetTextDatum(ReadResourceKey(relid, row, PG_GETARG_JSONB_P(1)))};
            Exec(
                "SELECT hwm FROM fencing.resource_hwm WHERE namespace OPERATOR(pg_catalog.=) $1"
                " AND resource OPERATOR(pg_catalog.=) $2",
                2, types, values);
            found = MaxOfResult(&hwm);
            break;
        }
        case Scope::kTable: {
            Oid types[] = {OIDOID};
            Datum values[] = {ObjectIdGetDatum(relid)};
            Exec("SELECT hwm FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) $1", 1,
                 types, values);
            found = MaxOfResult(&hwm);
            break;
        }
    }
    EndInternalAccess(&access);
    SPI_finish();
    if (!found)
        PG_RETURN_NULL();
    PG_RETURN_INT64(hwm);
}

// (namespace, resource) of the resource-named functions: arguments 1 and 0,
// the namespace defaulting to 'default'.
void NamespaceAndResource(FunctionCallInfo fcinfo, Datum *values) {
    values[0] = PG_ARGISNULL(1) ? CStringGetTextDatum("default") : PG_GETARG_DATUM(1);
    values[1] = PG_GETARG_DATUM(0);
}

Datum HighWaterOfResource(FunctionCallInfo fcinfo) {
    if (PG_ARGISNULL(0))
        PG_RETURN_NULL();
    InternalAccess access;
    SPI_connect();
    BeginInternalAccess(&access);
    Oid types[] = {TEXTOID, TEXTOID};
    Datum values[2];
    NamespaceAndResource(fcinfo, values);
    Exec(
        "SELECT hwm FROM fencing.resource_hwm WHERE namespace OPERATOR(pg_catalog.=) $1"
        " AND resource OPERATOR(pg_catalog.=) $2",
        2, types, values);
    Token hwm = 0;
    bool found = MaxOfResult(&hwm);
    EndInternalAccess(&access);
    SPI_finish();
    if (!found)
        PG_RETURN_NULL();
    PG_RETURN_INT64(hwm);
}

// Deletes HWM rows and logs each one, with the calling user (captured before
// internal access switched the user id); returns how many were removed.
int64 ResetAndLog(const char *delete_sql, int nargs, Oid *types, Datum *values, const char *target,
                  const char *caller) {
    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfo(
        &sql,
        "WITH gone AS (%s) INSERT INTO fencing.reset_log (reset_by, target, key, old_hwm)"
        " SELECT pg_catalog.quote_ident(%s), %s, gone.key, gone.hwm FROM gone",
        delete_sql, quote_literal_cstr(caller), quote_literal_cstr(target));
    Exec(sql.data, nargs, types, values);
    int64 removed = static_cast<int64>(SPI_processed);
    ereport(LOG, (errmsg("fencing_reset: %s removed " INT64_FORMAT " high-water mark(s) of %s",
                         caller, removed, target)));
    return removed;
}

Datum ResetTable(FunctionCallInfo fcinfo) {
    if (!PG_ARGISNULL(0) && SearchSysCacheExists1(RELOID, PG_GETARG_DATUM(0)) &&
        !pg_class_ownercheck(PG_GETARG_OID(0), GetUserId()))
        aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(PG_GETARG_OID(0)));
    const char *caller = GetUserNameFromId(GetUserId(), false);
    InternalAccess access;
    SPI_connect();
    BeginInternalAccess(&access);
    ProtectedRow row;
    Oid relid = RequireProtectedTarget(fcinfo, &row);
    const char *target = RelName(relid);
    int64 removed = 0;
    switch (row.scope) {
        case Scope::kRow: {
            if (PG_ARGISNULL(1)) {
                Oid types[] = {OIDOID};
                Datum values[] = {ObjectIdGetDatum(relid)};
                removed = ResetAndLog(
                    "DELETE FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) $1"
                    " RETURNING key::pg_catalog.text AS key, hwm",
                    1, types, values, target, caller);
            } else {
                KeyValues k;
                ReadRowKey(relid, PG_GETARG_JSONB_P(1), &k);
                Oid types[] = {OIDOID, TEXTARRAYOID};
                Datum values[] = {ObjectIdGetDatum(relid),
                                  TombstoneKey(k.pk.natts, k.types, k.values)};
                removed = ResetAndLog(
                    "DELETE FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) $1"
                    " AND key OPERATOR(pg_catalog.=) $2"
                    " RETURNING key::pg_catalog.text AS key, hwm",
                    2, types, values, target, caller);
            }
            break;
        }
        case Scope::kResource: {
            if (PG_ARGISNULL(1))
                ereport(ERROR,
                        (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                         errmsg("name the resource to reset: {\"%s\": <resource>}",
                                row.resource_column),
                         errdetail("Resource HWMs are shared by every table in namespace %s.",
                                   quote_literal_cstr(row.resource_namespace))));
            Oid types[] = {TEXTOID, TEXTOID};
            Datum values[] = {
                CStringGetTextDatum(row.resource_namespace),
                CStringGetTextDatum(ReadResourceKey(relid, row, PG_GETARG_JSONB_P(1)))};
            removed = ResetAndLog(
                "DELETE FROM fencing.resource_hwm WHERE namespace OPERATOR(pg_catalog.=) $1"
                " AND resource OPERATOR(pg_catalog.=) $2 RETURNING resource AS key, hwm",
                2, types, values, target, caller);
            break;
        }
        case Scope::kTable: {
            Oid types[] = {OIDOID};
            Datum values[] = {ObjectIdGetDatum(relid)};
            removed = ResetAndLog(
                "DELETE FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) $1"
                " RETURNING NULL::pg_catalog.text AS key, hwm",
                1, types, values, target, caller);
            break;
        }
    }
    EndInternalAccess(&access);
    SPI_finish();
    PG_RETURN_INT64(removed);
}

Datum ResetResource(FunctionCallInfo fcinfo) {
    if (PG_ARGISNULL(0))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("resource must not be NULL")));
    Oid caller_id = GetUserId();
    const char *caller = GetUserNameFromId(caller_id, false);
    InternalAccess access;
    SPI_connect();
    BeginInternalAccess(&access);
    Oid types[] = {TEXTOID, TEXTOID};
    Datum values[2];
    NamespaceAndResource(fcinfo, values);
    // The namespace's owner (or a superuser) may reset its resources.
    Exec("SELECT owner FROM fencing.resource_namespace WHERE name OPERATOR(pg_catalog.=) $1", 1,
         types, values);
    Oid owner =
        SPI_processed > 0
            ? get_role_oid(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), true)
            : InvalidOid;

    if (!superuser_arg(caller_id) && !(OidIsValid(owner) && has_privs_of_role(caller_id, owner)))
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("only the owner of resource namespace %s or a superuser may reset "
                               "its high-water marks",
                               quote_literal_cstr(text_to_cstring(DatumGetTextPP(values[0])))),
                        errhint("A table owner can use fencing_reset(table, key).")));
    char *target = psprintf("namespace %s", text_to_cstring(DatumGetTextPP(values[0])));
    int64 removed = ResetAndLog(
        "DELETE FROM fencing.resource_hwm WHERE namespace OPERATOR(pg_catalog.=) $1"
        " AND resource OPERATOR(pg_catalog.=) $2 RETURNING resource AS key, hwm",
        2, types, values, target, caller);
    EndInternalAccess(&access);
    SPI_finish();
    PG_RETURN_INT64(removed);
}

}  // namespace
}  // namespace fencing::pg

FENCING_FUNCTION(fencing_high_water_table) {
    return fencing::pg::HighWaterOfTable(fcinfo);
}
FENCING_FUNCTION(fencing_high_water_resource) {
    return fencing::pg::HighWaterOfResource(fcinfo);
}
FENCING_FUNCTION(fencing_reset_table) {
    return fencing::pg::ResetTable(fcinfo);
}
FENCING_FUNCTION(fencing_reset_resource) {
    return fencing::pg::ResetResource(fcinfo);
}
