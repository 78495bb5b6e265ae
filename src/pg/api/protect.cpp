// fencing_protect() and fencing_unprotect(): a table owner's way to fence a
// table, change its policy, or stop fencing it. They write fencing.protected
// (pg/catalog/policy_store.hpp); its trigger installs the guards (pg/guard/install.hpp).
#include "core/policy.hpp"
#include "pg/base/boundary.hpp"
#include "pg/ddl/checks.hpp"
#include "pg/guard/install.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/catalog/namespaces.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/catalog/citus_node.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/keys/resource_key.hpp"
#include "pg/keys/row_key.hpp"
#include "pg/types/token_type.hpp"
#include "pg/keys/tombstone_key.hpp"
#include "pg/hwm/lock.hpp"
#include "pg/hwm/policy_carry.hpp"
#include "pg/hwm/tombstones.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "storage/lmgr.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

namespace fencing::pg {
namespace {

void RequireTable(Oid relid) {
    char kind = get_rel_relkind(relid);
    if (kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE)
        ereport(ERROR,
                (errcode(ERRCODE_WRONG_OBJECT_TYPE), errmsg("%s is not a table", RelName(relid)),
                 errdetail("Only ordinary and partitioned tables can be fenced.")));
    if (get_rel_namespace(relid) == ExtensionSchemaOid(true))
        ereport(ERROR,
                (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                 errmsg("cannot fence %s: it belongs to the fencing extension", RelName(relid))));
    if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("cannot fence temporary table %s", RelName(relid)),
                        errdetail("A temporary table is private to one session and vanishes "
                                  "with it; there is no other writer to fence out."),
                        errhint("Fence a regular table; temporary tables are never fenced.")));
}

char *TextArg(FunctionCallInfo fcinfo, int n, const char *fallback) {
    return PG_ARGISNULL(n) ? pstrdup(fallback) : text_to_cstring(PG_GETARG_TEXT_PP(n));
}

// scope, on_stale, strict and require_token have defaults, but an explicit
// NULL is not "the default": calling fencing_protect() again changes the
// policy, so strict => NULL would silently switch strict mode off.
void RequirePolicyArg(FunctionCallInfo fcinfo, int n, const char *argname) {
    if (PG_ARGISNULL(n))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be NULL", argname),
                 errhint("Leave the argument out to get its default.")));
}

// The policy arguments as the caller gave them: scope, on_stale, strict,
// require_token and resource_namespace (columns are read later, in the
// internal session).
void ReadPolicyArgs(FunctionCallInfo fcinfo, ProtectedRow *row) {
    RequirePolicyArg(fcinfo, 2, "scope");
    RequirePolicyArg(fcinfo, 5, "on_stale");
    RequirePolicyArg(fcinfo, 6, "strict");
    RequirePolicyArg(fcinfo, 7, "require_token");
    char *scope = TextArg(fcinfo, 2, "row");
    if (!ParseScope(scope, &row->scope))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("invalid fencing scope \"%s\"", scope),
                        errhint("Valid scopes are \"row\", \"resource\" and \"table\".")));
    char *on_stale = TextArg(fcinfo, 5, "error");
    if (!ParseOnStale(on_stale, &row->on_stale))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("invalid on_stale action \"%s\"", on_stale),
                        errhint("Valid actions are \"error\" and \"skip\".")));
    row->strict = PG_GETARG_BOOL(6);
    row->require_token = PG_GETARG_BOOL(7);
    row->resource_namespace = TextArg(fcinfo, 4, row->scope == Scope::kResource ? "default" : "");
}

// The token column: token_column, or else the table's one fencing_token
// column; of type fencing_token or bigint. Returns its attnum.
AttrNumber ChooseTokenColumn(FunctionCallInfo fcinfo, Oid relid, ProtectedRow *row) {
    if (PG_ARGISNULL(1)) {
        int n = TokenColumns(relid, row->token_column);
        if (n == 0)
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                            errmsg("table %s has no fencing_token column", RelName(relid)),
                            errhint("Name the token column: fencing_protect(%s, token_column => "
                                    "'...').",
                                    quote_literal_cstr(RelName(relid)))));
        if (n > 1)
            ereport(ERROR, (errcode(ERRCODE_AMBIGUOUS_COLUMN),
                            errmsg("table %s has %d fencing_token columns", RelName(relid), n),
                            errhint("Name the token column with token_column => '...'.")));
    } else {
        strlcpy(row->token_column, NameStr(*PG_GETARG_NAME(1)), NAMEDATALEN);
    }
    AttrNumber token_attnum = RequireColumn(relid, row->token_column, "token");
    Oid token_type = get_atttype(relid, token_attnum);
    if (!IsTokenColumnType(token_type))
        ereport(ERROR,
                (errcode(ERRCODE_DATATYPE_MISMATCH),
                 errmsg("token column \"%s\" must be of type fencing_token or bigint, not %s",
                        row->token_column, format_type_be(token_type))));
    return token_attnum;
}

// Resource HWMs are keyed by the value's text: equal values must print
// alike, and compare equal only when their text is equal (no
// nondeterministic collation).
void RequireCanonicalResourceColumn(Oid relid, const char *column) {
    Oid resource_type = get_atttype(relid, RequireColumn(relid, column, "resource"));
    if (!ResourceTypeIsCanonical(resource_type))
        ereport(ERROR,
                (errcode(ERRCODE_DATATYPE_MISMATCH),
                 errmsg("resource column \"%s\" has type %s, whose text form is not canonical",
                        column, format_type_be(resource_type)),
                 errdetail("Resource HWMs are keyed by the value's text, so equal values must "
                           "print alike: use text, varchar, an integer type, uuid, numeric, "
                           "bool, an enum or fencing_token.")));
    Oid type, collation;
    int32 typmod;
    get_atttypetypmodcoll(relid, get_attnum(relid, column), &type, &typmod, &collation);
    if (OidIsValid(collation) && !get_collation_isdeterministic(collation))
        ereport(ERROR,
                (errcode(ERRCODE_DATATYPE_MISMATCH),
                 errmsg("resource column \"%s\" has a nondeterministic collation", column),
                 errdetail("Resource HWMs are keyed by the value's text; under collation %s, "
                           "values that differ in their text are equal.",
                           quote_identifier(get_collation_name(collation))),
                 errhint("Use a deterministic collation for the resource column, or row "
                         "scope.")));
}

// Resource scope: the resource column and the namespace the table joins
// (claimed for the table's owner when unclaimed). Other scopes take neither.
void ChooseResource(FunctionCallInfo fcinfo, Oid relid, ProtectedRow *row) {
    if (row->scope != Scope::kResource) {
        if (!PG_ARGISNULL(3) || !PG_ARGISNULL(4))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("resource_column and resource_namespace apply to resource "
                                   "scope only")));
        return;
    }
    if (PG_ARGISNULL(3))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("resource scope needs a resource_column")));
    strlcpy(row->resource_column, NameStr(*PG_GETARG_NAME(3)), NAMEDATALEN);
    RequireCanonicalResourceColumn(relid, row->resource_column);
    if (row->resource_namespace[0] == '\0')
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("resource_namespace must not be empty")));
    RequireStorableResourceKey(row->resource_namespace, "");
    JoinNamespace(row->resource_namespace, RelationOwner(relid));
}

// relid must be the home of its partition tree's fencing state: not a
// partition of a protected table, nor (unless protected already) above a
// partition protected on its own. A table protected already is its
// partitions' home: an ATTACH carried their state over, and what a
// partition keeps on its own is a copy (DETACH ... CONCURRENTLY in resource
// or table scope, pending).
void RequireTreeHome(Oid relid) {
    if (OidIsValid(ProtectedAncestor(relid)))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s is a partition of a protected table", RelName(relid)),
                        errhint("Its protection comes from the partitioned table.")));
    ProtectedRow current;
    Oid below = ReadProtectedRow(relid, &current) ? InvalidOid : ProtectedDescendant(relid);
    if (OidIsValid(below))
        ereport(
            ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("%s has a partition protected on its own: %s", RelName(relid), RelName(below)),
             errdetail("%s keeps its own tombstones and high-water marks, which %s would "
                       "not see once it became their fenced table: a stale writer could "
                       "re-insert a deleted key.",
                       RelName(below), RelName(relid)),
             errhint("Detach %s, protect %s, then attach %s again: ATTACH carries its "
                     "state over.",
                     RelName(below), RelName(relid), RelName(below))));
}

// The policy is read, its HWMs carried and the new one written with every
// writer and raiser of the table kept out until this transaction ends: the
// policy lock first (fencing_advance() shares it before it reads the
// policy), then the table and each partition in the mode CREATE TRIGGER
// takes (a write to a partition locks the partition only).
void LockPolicy(Oid relid) {
    LockAttachExclusive(relid);
    LockRelationOid(relid, ShareRowExclusiveLock);
    if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
        (void)find_all_inheritors(relid, ShareRowExclusiveLock, nullptr);
}

Datum Protect(FunctionCallInfo fcinfo) {
    Oid relid = ExistingRelationArg(fcinfo, 0, "target");
    RequireTable(relid);
    RequireRelationOwner(relid);
    ProtectedRow row;
    memset(&row, 0, sizeof(row));
    row.relid = relid;
    ReadPolicyArgs(fcinfo, &row);
    RefuseOnCitus(CitusAction::kProtect, relid, row.scope);

    LockPolicy(relid);
    // Ownership was checked above, as the caller; from here on the extension's
    // own tables are read and written.
    InternalSession access;
    BeginInternal(&access);
    AttrNumber token_attnum = ChooseTokenColumn(fcinfo, relid, &row);
    ChooseResource(fcinfo, relid, &row);
    RequireTreeHome(relid);
    if (row.scope == Scope::kRow) {
        RequireCanonicalRowKeyOf(relid);  // InstallGuard checks again, for each leaf
        RequireTombstoneKeysFitRows(relid);
    }
    RequireFenceable(relid, token_attnum,
                     row.scope == Scope::kResource ? get_attnum(relid, row.resource_column) : 0,
                     row.scope == Scope::kRow);
    ProtectedRow current;
    bool change = ReadProtectedRow(relid, &current);
    EndInternal(&access);
    // A policy change carries the HWMs its writes were judged by, or is
    // refused (pg/hwm/policy_carry.hpp).
    if (change)
        CarryHwmsAcrossPolicy(current, row);
    BeginInternal(&access);
    WriteProtectedRow(row);  // fencing.protected_sync installs the guards
    EndInternal(&access);
    PG_RETURN_VOID();
}

}  // namespace
}  // namespace fencing::pg

using namespace fencing::pg;

FENCING_FUNCTION(fencing_protect) {
    return Protect(fcinfo);
}

FENCING_FUNCTION(fencing_unprotect) {
    Oid relid = ExistingRelationArg(fcinfo, 0, "target");
    RequireRelationOwner(relid);
    InternalSession access;
    BeginInternal(&access);
    ProtectedRow row;
    bool was_protected = ReadProtectedRow(relid, &row);
    if (!was_protected && OidIsValid(ProtectedAncestor(relid)))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s is a partition of a protected table", RelName(relid)),
                        errhint("Unprotect the partitioned table, or detach the partition.")));
    if (was_protected)
        DeleteProtectedRow(relid);
    else
        SyncGuards(relid);  // e.g. a detached partition still carrying its old parent's guard
    EndInternal(&access);
    if (!was_protected)
        ereport(NOTICE, (errmsg("table %s was not protected", RelName(relid))));
    PG_RETURN_BOOL(was_protected);
}
