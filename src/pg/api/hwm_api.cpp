// Reading and resetting high-water marks from SQL:
//   fencing_high_water(target regclass, key jsonb)   anyone who may SELECT the table
//   fencing_resource_high_water(resource text, namespace text)  anyone
//   fencing_reset(target regclass, key jsonb)         the table owner (resource scope:
//                                                      also the namespace owner); logged
//   fencing_resource_reset(resource text, namespace text)       the namespace owner; logged
#include "pg/base/boundary.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/hwm/store.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/catalog/namespaces.hpp"
#include "pg/catalog/citus_node.hpp"
#include "pg/base/json_args.hpp"
#include "pg/guard/install.hpp"
#include "pg/keys/resource_key.hpp"
#include "pg/keys/row_key.hpp"
#include "pg/api/hwm_args.hpp"
#include "pg/base/compat.hpp"

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

}  // namespace

// The protected table named by argument 0 and its policy. The policy is read
// in an internal session of its own: what follows runs as the caller.
Oid RequireProtectedTarget(FunctionCallInfo fcinfo, ProtectedRow *row) {
    Oid relid = ExistingRelationArg(fcinfo, 0, "target");
    InternalSession session;
    BeginInternal(&session);
    bool found = ReadProtectedRow(relid, row);
    EndInternal(&session);
    if (!found)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("table %s is not protected by fencing", RelName(relid))));
    return relid;
}

// Row scope: the primary key values named by key, converted to column types.
// Runs as the caller: a domain's CHECK or a type's input function on a key
// column is the caller's code and gets the caller's rights.
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
    out->pkindex = PrimaryKeyIndex(rel);
    TupleDesc desc = RelationGetDescr(rel);
    if (m.count != out->pk.natts) {
        table_close(rel, AccessShareLock);
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("key must name exactly the primary key columns of %s", RelName(relid))));
    }
    for (int i = 0; i < out->pk.natts; ++i) {
        Form_pg_attribute att = TupleDescAttr(desc, out->pk.attnums[i] - 1);
        int found = -1;
        for (int j = 0; j < m.count; ++j)
            if (strcmp(m.names[j], NameStr(att->attname)) == 0)
                found = j;
        if (found < 0) {
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
// column type's text output). Runs as the caller, as ReadRowKey does.
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

void ReadTargetKey(FunctionCallInfo fcinfo, int n, Oid relid, const ProtectedRow &row,
                   TargetKey *out) {
    out->given = !PG_ARGISNULL(n);
    out->resource = nullptr;
    if (!out->given)
        return;
    if (row.scope == Scope::kRow)
        ReadRowKey(relid, PG_GETARG_JSONB_P(n), &out->row);
    else if (row.scope == Scope::kResource)
        out->resource = ReadResourceKey(relid, row, PG_GETARG_JSONB_P(n));
}

void RequireTargetKey(FunctionCallInfo fcinfo, int n, Oid relid, const ProtectedRow &row,
                      TargetKey *out) {
    if (PG_ARGISNULL(n) && row.scope == Scope::kRow)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("table %s is fenced per row: pass the row's primary key", RelName(relid))));
    if (PG_ARGISNULL(n) && row.scope == Scope::kResource)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("table %s is fenced per resource: pass {\"%s\": <resource>}",
                               RelName(relid), row.resource_column)));
    ReadTargetKey(fcinfo, n, relid, row, out);
}

Token TokenArg(FunctionCallInfo fcinfo, int n) {
    if (PG_ARGISNULL(n))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("token must not be NULL")));
    return PG_GETARG_INT64(n);
}

namespace {

// The live row's token, read as the table's owner in a restricted security
// context (as ANALYZE reads a table): the caller's RLS policies cannot hide the
// row, and no code reached from the scan runs with more than the owner's rights.
bool LiveRowToken(Oid relid, const ProtectedRow &row, const KeyValues &k, Token *out) {
    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfo(&sql, "SELECT %s::pg_catalog.int8 FROM %s WHERE ",
                     quote_identifier(row.token_column), RelName(relid));
    Relation rel = table_open(relid, AccessShareLock);
    Oid rel_owner = rel->rd_rel->relowner;
    Oid argtypes[INDEX_MAX_KEYS];
    AppendKeyPredicate(&sql, rel, k.pk, k.pkindex, argtypes);
    table_close(rel, AccessShareLock);
    Oid internal_user;
    int internal_context;
    GetUserIdAndSecContext(&internal_user, &internal_context);
    SetUserIdAndSecContext(
        rel_owner, internal_context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
    int rc = SPI_execute_with_args(sql.data, k.pk.natts, argtypes, const_cast<Datum *>(k.values),
                                   nullptr, true, 1);
    SetUserIdAndSecContext(internal_user, internal_context);
    if (rc < 0)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("fencing: HWM lookup failed: %s", SPI_result_code_string(rc))));
    return MaxOfResult(out);
}

// A row's HWM: its live row's token or the tombstone a deleted row left,
// whichever is higher; neither: the table's floor (retirement). Inside an
// internal session.
bool RowHwm(Oid relid, const ProtectedRow &row, const KeyValues &k, Datum tombstone_key,
            Token *hwm) {
    bool found = LiveRowToken(relid, row, k, hwm);
    Token tombstone;
    bool floor;
    // The table's floor stands in for a key with neither a row nor a tombstone.
    if (LookupTombstone(relid, tombstone_key, &tombstone, &floor) && !(floor && found) &&
        (!found || tombstone > *hwm)) {
        *hwm = tombstone;
        found = true;
    }
    return found;
}

}  // namespace
}  // namespace fencing::pg

using namespace fencing;
using namespace fencing::pg;

FENCING_FUNCTION(fencing_high_water_table) {
    // Privilege check and key conversion as the caller, before any elevation.
    Oid relid = ExistingRelationArg(fcinfo, 0, "target");
    RequireRelationPrivilege(relid, ACL_SELECT);
    RefuseOnCitus(CitusAction::kHighWaterRead, relid, Scope::kRow);
    ProtectedRow row;
    RequireProtectedTarget(fcinfo, &row);
    TargetKey key;
    RequireTargetKey(fcinfo, 1, relid, row, &key);
    // Only fixed statements from here on.
    Datum tombstone_key = row.scope == Scope::kRow
                              ? TombstoneKey(key.row.pk.natts, key.row.types, key.row.values)
                              : (Datum)0;
    InternalSession session;
    BeginInternal(&session);
    Token hwm = 0;
    bool found = false;
    switch (row.scope) {
        case Scope::kRow:
            found = RowHwm(relid, row, key.row, tombstone_key, &hwm);
            break;
        case Scope::kResource:
            found = ReadResourceHwm(row.resource_namespace, key.resource, &hwm);
            break;
        case Scope::kTable:
            found = ReadTableHwm(relid, &hwm);
            break;
    }
    EndInternal(&session);
    if (!found)
        PG_RETURN_NULL();
    PG_RETURN_INT64(hwm);
}

FENCING_FUNCTION(fencing_high_water_resource) {
    char *name_space = NamespaceArg(fcinfo, 1);
    if (PG_ARGISNULL(0))
        PG_RETURN_NULL();
    char *resource = text_to_cstring(PG_GETARG_TEXT_PP(0));
    InternalSession session;
    BeginInternal(&session);
    Token hwm = 0;
    bool found = ReadResourceHwm(name_space, resource, &hwm);
    EndInternal(&session);
    if (!found)
        PG_RETURN_NULL();
    PG_RETURN_INT64(hwm);
}

FENCING_FUNCTION(fencing_reset_table) {
    Oid relid = ExistingRelationArg(fcinfo, 0, "target");
    RequireRelationOwner(relid);
    const char *caller = GetUserNameFromId(GetUserId(), false);
    ProtectedRow row;
    RequireProtectedTarget(fcinfo, &row);
    const char *target = RelName(relid);
    // The caller's key, converted as the caller; in row scope NULL resets
    // every tombstone.
    if (row.scope == Scope::kResource && PG_ARGISNULL(1))
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("name the resource to reset: {\"%s\": <resource>}", row.resource_column),
                 errdetail("Resource HWMs are shared by every table in namespace %s.",
                           quote_literal_cstr(row.resource_namespace))));
    TargetKey key;
    ReadTargetKey(fcinfo, 1, relid, row, &key);
    Datum tombstone_key = row.scope == Scope::kRow && key.given
                              ? TombstoneKey(key.row.pk.natts, key.row.types, key.row.values)
                              : (Datum)0;
    InternalSession session;
    BeginInternal(&session);
    int64 removed = 0;
    switch (row.scope) {
        case Scope::kRow:
            removed = ResetTombstones(relid, tombstone_key, target, caller);
            break;
        case Scope::kResource: {
            // The HWM is shared by every table in the namespace: lowering it
            // is the namespace owner's call, not any one table owner's.
            RequireNamespaceOwner(row.resource_namespace, session.saved_user,
                                  "reset its high-water marks");
            removed = ResetResourceHwm(row.resource_namespace, key.resource, target, caller);
            break;
        }
        case Scope::kTable:
            removed = ResetTableHwm(relid, target, caller);
            break;
    }
    EndInternal(&session);
    PG_RETURN_INT64(removed);
}

FENCING_FUNCTION(fencing_reset_resource) {
    char *name_space = NamespaceArg(fcinfo, 1);
    if (PG_ARGISNULL(0))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("resource must not be NULL")));
    Oid caller_id = GetUserId();
    const char *caller = GetUserNameFromId(caller_id, false);
    char *resource = text_to_cstring(PG_GETARG_TEXT_PP(0));
    InternalSession session;
    BeginInternal(&session);
    RequireNamespaceOwner(name_space, caller_id, "reset its high-water marks");
    char *target = psprintf("namespace %s", name_space);
    int64 removed = ResetResourceHwm(name_space, resource, target, caller);
    EndInternal(&session);
    PG_RETURN_INT64(removed);
}
