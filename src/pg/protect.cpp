// Protection management: fencing_protect(), fencing_unprotect(), the guard
// triggers they install, and the DDL hooks that keep protection in step with
// CREATE TABLE, ALTER TABLE (renames, dropped columns, partitions) and restore.
//
// fencing.protected is the single source of truth and is dumped by pg_dump.
// Every change to a row of fencing.protected (re)installs the guard triggers,
// through the ALWAYS trigger fencing.protected_sync, so a restored policy
// re-creates its guards. Guards are ordinary triggers, so pg_upgrade keeps them
// (guard_integrity.hpp: dumped guards, guard DDL, TRUNCATE).
#include "core/policy.hpp"
#include "pg/boundary.hpp"
#include "pg/ddl_checks.hpp"
#include "pg/relation_args.hpp"
#include "pg/guc.hpp"
#include "pg/guard_integrity.hpp"
#include "pg/hwm_store.hpp"
#include "pg/internal_access.hpp"
#include "pg/namespaces.hpp"
#include "pg/move_recheck.hpp"
#include "pg/protect.hpp"
#include "pg/row_key.hpp"
#include "pg/token_type.hpp"
#include "pg/tombstone_key.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace fencing::pg {

// The relations that carry guards: the table itself, or every leaf partition.
static bool HasInternalName(const char *tgname, const char *name) {
    size_t n = strlen(name);
    return strncmp(tgname, name, n) == 0 && tgname[n] == '_';
}

bool IsGuardTrigger(const char *tgname) {
    return HasInternalName(tgname, kGuardName);
}
bool IsRecheckTrigger(const char *tgname) {
    return HasInternalName(tgname, kRecheckName);
}
bool IsMoveRecheckTrigger(const char *tgname) {
    return HasInternalName(tgname, kMoveRecheckName);
}

List *GuardedRelations(Oid relid, LOCKMODE lockmode) {
    if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
        return list_make1_oid(relid);
    List *leaves = NIL;
    ListCell *lc;
    foreach (lc, find_all_inheritors(relid, lockmode, nullptr)) {
        Oid child = lfirst_oid(lc);
        if (get_rel_relkind(child) == RELKIND_RELATION)
            leaves = lappend_oid(leaves, child);
    }
    return leaves;
}

// The guard's decoded policy on a guarded relation, if it has one.
bool GuardPolicy(Oid leaf, Policy *policy) {
    Relation rel = table_open(leaf, AccessShareLock);
    bool found = false;
    TriggerDesc *desc = rel->trigdesc;
    for (int i = 0; desc != nullptr && i < desc->numtriggers && !found; ++i) {
        Trigger *t = &desc->triggers[i];
        if (IsGuardTrigger(t->tgname) && t->tgnargs >= 1)
            found = DecodePolicy(t->tgargs[0], policy);
    }
    table_close(rel, AccessShareLock);
    return found;
}

namespace {

// Sorts after ordinary trigger names, so user BEFORE ROW triggers that
// change NEW normally run before the check sees it.
constexpr const char *kGuardName = "zz_fencing_guard";

// Runs SQL on the internal tables (inside an internal session).
void Exec(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls) {
    int rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
    if (rc < 0)
        elog(ERROR, "fencing: internal statement failed: %s", SPI_result_code_string(rc));
}

}  // namespace

bool ReadProtectedRow(Oid relid, ProtectedRow *row) {
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    Exec(
        "SELECT token_column::pg_catalog.text, scope, resource_column::pg_catalog.text,"
        " resource_namespace,"
        " on_stale, strict, require_token FROM fencing.protected"
        " WHERE relid OPERATOR(pg_catalog.=) $1",
        1, types, values, nullptr);
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

namespace {

// A column's name, or nullptr once it has been dropped.
char *LiveAttName(Oid relid, AttrNumber attnum) {
    HeapTuple tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(attnum));
    if (!HeapTupleIsValid(tup))
        return nullptr;
    auto *att = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tup));
    char *name = att->attisdropped ? nullptr : pstrdup(NameStr(att->attname));
    ReleaseSysCache(tup);
    return name;
}

Oid FencingFunction(const char *name) {
    return LookupFuncName(list_make2(makeString(pstrdup("fencing")), makeString(pstrdup(name))), 0,
                          nullptr, false);
}

void RemoveGuard(Oid relid) {
    Relation rel = table_open(relid, ShareRowExclusiveLock);
    List *guards = NIL;
    TriggerDesc *desc = rel->trigdesc;
    for (int i = 0; desc != nullptr && i < desc->numtriggers; ++i)
        if (IsGuardTrigger(desc->triggers[i].tgname) ||
            IsRecheckTrigger(desc->triggers[i].tgname) ||
            IsMoveRecheckTrigger(desc->triggers[i].tgname) ||
            IsTruncateGuardTrigger(desc->triggers[i].tgname))
            guards = lappend_oid(guards, desc->triggers[i].tgoid);
    table_close(rel, NoLock);
    ListCell *lc;
    foreach (lc, guards) {
        ObjectAddress addr;
        ObjectAddressSet(addr, TriggerRelationId, lfirst_oid(lc));
        performDeletion(&addr, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
    }
}

int RequireColumn(Oid relid, const char *column, const char *what) {
    AttrNumber attnum = get_attnum(relid, column);
    if (attnum == InvalidAttrNumber)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("%s column \"%s\" of relation %s does not exist", what, column,
                               RelName(relid))));
    if (attnum < 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
                        errmsg("cannot use system column \"%s\" as the %s column", column, what)));
    return attnum;
}

void InstallGuard(Oid leaf, const ProtectedRow &row) {
    // Every path that fences a table in row scope comes here (protect,
    // auto-protection, partitions, restore, DDL on a protected table).
    if (row.scope == Scope::kRow)
        RequireCanonicalRowKeyOf(leaf);
    Policy policy;
    policy.home_relid = row.relid;
    policy.token_attnum = RequireColumn(leaf, row.token_column, "token");
    policy.scope = row.scope;
    policy.on_stale = row.on_stale;
    policy.strict = row.strict;
    policy.require_token = row.require_token;
    policy.resource_attnum =
        row.scope == Scope::kResource ? RequireColumn(leaf, row.resource_column, "resource") : 0;
    char encoded[kPolicyTextCapacity];
    EncodePolicy(policy, encoded);

    CreateTrigStmt *stmt = makeNode(CreateTrigStmt);
    stmt->replace = false;
    stmt->isconstraint = false;
    stmt->trigname = GuardTriggerName(kGuardName, leaf);  // not internal: pg_upgrade keeps it
    stmt->relation =
        makeRangeVar(get_namespace_name(get_rel_namespace(leaf)), get_rel_name(leaf), -1);
    stmt->funcname = list_make2(makeString(pstrdup("fencing")), makeString(pstrdup("guard")));
    stmt->args = list_make2(
        makeString(pstrdup(encoded)),
        makeString(pstrdup(row.scope == Scope::kResource ? row.resource_namespace : "")));
    stmt->row = true;
    stmt->timing = TRIGGER_TYPE_BEFORE;
    stmt->events = TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE;
    stmt->columns = NIL;
    stmt->whenClause = nullptr;
    stmt->transitionRels = NIL;
    stmt->deferrable = false;
    stmt->initdeferred = false;
    stmt->constrrel = nullptr;
    CreateTrigger(stmt, nullptr, leaf, InvalidOid, InvalidOid, InvalidOid, FencingFunction("guard"),
                  InvalidOid, nullptr, false, false);
    if (row.scope == Scope::kRow) {
        // Row scope: the AFTER INSERT tombstone recheck (see fence_trigger.cpp).
        CreateTrigStmt *recheck = static_cast<CreateTrigStmt *>(copyObjectImpl(stmt));
        recheck->trigname = GuardTriggerName(kRecheckName, leaf);
        recheck->funcname =
            list_make2(makeString(pstrdup("fencing")), makeString(pstrdup("recheck")));
        recheck->timing = TRIGGER_TYPE_AFTER;
        recheck->events = TRIGGER_TYPE_INSERT;
        CreateTrigger(recheck, nullptr, leaf, InvalidOid, InvalidOid, InvalidOid,
                      FencingFunction("recheck"), InvalidOid, nullptr, false, false);
        InstallMoveRecheck(leaf, recheck, FencingFunction("recheck"));
    }
    InstallTruncateGuard(leaf, row);
}

void DeleteProtectedRow(Oid relid) {
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    Exec("DELETE FROM fencing.protected WHERE relid OPERATOR(pg_catalog.=) $1", 1, types, values,
         nullptr);
}

// Makes the guards of relid match its row in fencing.protected (or removes
// them when there is none). Inside an internal session.
void SyncGuards(Oid relid) {
    if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
        return;
    ProtectedRow row;
    bool is_protected = ReadProtectedRow(relid, &row);
    ListCell *lc;
    foreach (lc, GuardedRelations(relid, ShareRowExclusiveLock)) {
        Oid leaf = lfirst_oid(lc);
        // A table attached as a partition gives up its own policy for its parent's.
        ProtectedRow own;
        if (leaf != relid && is_protected && ReadProtectedRow(leaf, &own)) {
            ereport(NOTICE, (errmsg("partition %s is now fenced by the policy of %s", RelName(leaf),
                                    RelName(relid))));
            DeleteProtectedRow(leaf);
        }
        RemoveGuard(leaf);
        if (is_protected)
            InstallGuard(leaf, row);
    }
    // Cached fenced-DML plans of a partitioned table depend on its leaves' guards.
    CacheInvalidateRelcacheByRelid(relid);
    CommandCounterIncrement();
}

Oid TokenType() {
    return FencingTokenTypeOid();
}

// Names of the fencing_token columns of a relation (at most two are needed).
int TokenColumns(Oid relid, char first[NAMEDATALEN]) {
    Oid token_type = TokenType();
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
    Exec(
        "INSERT INTO fencing.protected AS p (relid, token_column, scope, resource_column,"
        " resource_namespace, on_stale, strict, require_token)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        " ON CONFLICT (relid) DO UPDATE SET token_column = excluded.token_column,"
        " scope = excluded.scope, resource_column = excluded.resource_column,"
        " resource_namespace = excluded.resource_namespace, on_stale = excluded.on_stale,"
        " strict = excluded.strict, require_token = excluded.require_token",
        8, types, values, nulls);
}

Oid get_rel_owner(Oid relid) {
    HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
    if (!HeapTupleIsValid(tup))
        elog(ERROR, "cache lookup failed for relation %u", relid);
    Oid owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup))->relowner;
    ReleaseSysCache(tup);
    return owner;
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

void RequireOwner(Oid relid) {
    if (!pg_class_ownercheck(relid, GetUserId()))
        aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(get_rel_relkind(relid)),
                       get_rel_name(relid));
}

void RequireTable(Oid relid) {
    char kind = get_rel_relkind(relid);
    if (kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE)
        ereport(ERROR,
                (errcode(ERRCODE_WRONG_OBJECT_TYPE), errmsg("%s is not a table", RelName(relid)),
                 errdetail("Only ordinary and partitioned tables can be fenced.")));
    if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("cannot fence temporary table %s", RelName(relid)),
                        errdetail("A temporary table is private to one session and vanishes "
                                  "with it; there is no other writer to fence out.")));
}

char *TextArg(FunctionCallInfo fcinfo, int n, const char *fallback) {
    return PG_ARGISNULL(n) ? pstrdup(fallback) : text_to_cstring(PG_GETARG_TEXT_PP(n));
}

Datum Protect(FunctionCallInfo fcinfo) {
    Oid relid = ExistingRelationArg(fcinfo, 0, "target");
    RequireTable(relid);
    RequireOwner(relid);

    ProtectedRow row;
    memset(&row, 0, sizeof(row));
    row.relid = relid;
    char *scope = TextArg(fcinfo, 2, "row");
    if (!ParseScope(scope, &row.scope))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("invalid fencing scope \"%s\"", scope),
                        errhint("Valid scopes are \"row\", \"resource\" and \"table\".")));
    char *on_stale = TextArg(fcinfo, 5, "error");
    if (!ParseOnStale(on_stale, &row.on_stale))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("invalid on_stale action \"%s\"", on_stale),
                        errhint("Valid actions are \"error\" and \"skip\".")));
    row.strict = !PG_ARGISNULL(6) && PG_GETARG_BOOL(6);
    row.require_token = !PG_ARGISNULL(7) && PG_GETARG_BOOL(7);
    row.resource_namespace = TextArg(fcinfo, 4, row.scope == Scope::kResource ? "default" : "");

    // Ownership was checked above, as the caller; from here on the extension's
    // own tables are read and written.
    InternalSession access;
    BeginInternal(&access);
    if (PG_ARGISNULL(1)) {
        int n = TokenColumns(relid, row.token_column);
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
        strlcpy(row.token_column, NameStr(*PG_GETARG_NAME(1)), NAMEDATALEN);
    }
    AttrNumber token_attnum = RequireColumn(relid, row.token_column, "token");
    Oid token_type = get_atttype(relid, token_attnum);
    if (token_type != TokenType() && token_type != INT8OID)
        ereport(ERROR,
                (errcode(ERRCODE_DATATYPE_MISMATCH),
                 errmsg("token column \"%s\" must be of type fencing_token or bigint, not %s",
                        row.token_column, format_type_be(token_type))));
    if (row.scope == Scope::kResource) {
        if (PG_ARGISNULL(3))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("resource scope needs a resource_column")));
        strlcpy(row.resource_column, NameStr(*PG_GETARG_NAME(3)), NAMEDATALEN);
        Oid resource_type =
            get_atttype(relid, RequireColumn(relid, row.resource_column, "resource"));
        if (!ResourceTypeIsCanonical(resource_type))
            ereport(ERROR,
                    (errcode(ERRCODE_DATATYPE_MISMATCH),
                     errmsg("resource column \"%s\" has type %s, whose text form is not canonical",
                            row.resource_column, format_type_be(resource_type)),
                     errdetail("Resource HWMs are keyed by the value's text, so equal values must "
                               "print alike: use text, varchar, an integer type, uuid, numeric, "
                               "bool, an enum or fencing_token.")));
        if (row.resource_namespace[0] == '\0')
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("resource_namespace must not be empty")));
        JoinNamespace(row.resource_namespace, get_rel_owner(relid));
    } else if (!PG_ARGISNULL(3) || !PG_ARGISNULL(4)) {
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("resource_column and resource_namespace apply to resource scope only")));
    }
    if (OidIsValid(ProtectedAncestor(relid)))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s is a partition of a protected table", RelName(relid)),
                        errhint("Its protection comes from the partitioned table.")));
    if (row.scope == Scope::kRow)
        RequireCanonicalRowKeyOf(relid);  // InstallGuard checks again, for each leaf
    RequireFenceable(relid, token_attnum,
                     row.scope == Scope::kResource ? get_attnum(relid, row.resource_column) : 0,
                     row.scope == Scope::kRow);
    WriteProtectedRow(row);  // fencing.protected_sync installs the guards
    EndInternal(&access);
    PG_RETURN_VOID();
}

// DDL hook, for one table created or altered by the current command.
void OnTableDdl(Oid relid) {
    char kind = get_rel_relkind(relid);
    if (kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE)
        return;
    // Temporary tables are never fenced: their drop at session end fires no
    // event trigger, so policy rows would outlive them.
    if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
        return;
    ProtectedRow row;
    if (ReadProtectedRow(relid, &row)) {
        // Renames keep attnums: follow them from a guard to the new names.
        List *guarded = GuardedRelations(relid, AccessShareLock);
        Policy policy;
        if (guarded != NIL && GuardPolicy(linitial_oid(guarded), &policy)) {
            Oid leaf = linitial_oid(guarded);
            char *token = LiveAttName(leaf, policy.token_attnum);
            char *resource =
                policy.resource_attnum > 0 ? LiveAttName(leaf, policy.resource_attnum) : nullptr;
            Oid token_type = token != nullptr ? get_atttype(leaf, policy.token_attnum) : InvalidOid;
            if (token != nullptr && token_type != INT8OID && token_type != TokenType()) {
                ereport(
                    NOTICE,
                    (errmsg(
                        "table %s is no longer fenced: its token column \"%s\" is now of type %s",
                        RelName(relid), token, format_type_be(token_type))));
                DeleteProtectedRow(relid);
                return;
            }
            if (token == nullptr || (policy.resource_attnum > 0 && resource == nullptr)) {
                ereport(NOTICE, (errmsg("table %s is no longer fenced: its %s column was dropped",
                                        RelName(relid), token == nullptr ? "token" : "resource")));
                DeleteProtectedRow(relid);
                return;
            }
            if (strcmp(token, row.token_column) != 0 ||
                (resource != nullptr && strcmp(resource, row.resource_column) != 0)) {
                strlcpy(row.token_column, token, NAMEDATALEN);
                if (resource != nullptr)
                    strlcpy(row.resource_column, resource, NAMEDATALEN);
                WriteProtectedRow(row);
                return;
            }
        }
        SyncGuards(relid);  // e.g. a partition attached
        return;
    }
    Oid ancestor = ProtectedAncestor(relid);
    if (OidIsValid(ancestor)) {
        SyncGuards(ancestor);
        return;
    }
    if (!AutoProtectEnabled())
        return;
    memset(&row, 0, sizeof(row));
    int n = TokenColumns(relid, row.token_column);
    if (n == 0)
        return;
    if (n > 1) {
        ereport(NOTICE,
                (errmsg("table %s is not fenced automatically: it has %d fencing_token columns",
                        RelName(relid), n),
                 errhint("Call fencing_protect() with token_column => '...'.")));
        return;
    }
    row.relid = relid;
    row.scope = Scope::kRow;
    row.on_stale = OnStale::kError;
    row.resource_namespace = pstrdup("");
    RequireCanonicalRowKeyOf(relid);
    WriteProtectedRow(row);
}

}  // namespace
}  // namespace fencing::pg

using namespace fencing::pg;

FENCING_FUNCTION(fencing_protect) {
    return Protect(fcinfo);
}

FENCING_FUNCTION(fencing_unprotect) {
    Oid relid = ExistingRelationArg(fcinfo, 0, "target");
    RequireOwner(relid);
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

// AFTER INSERT OR UPDATE OR DELETE ON fencing.protected, ENABLE ALWAYS.
FENCING_FUNCTION(fencing_protected_sync) {
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("fencing.protected_sync() can only be called as a trigger")));
    TriggerData *td = reinterpret_cast<TriggerData *>(fcinfo->context);
    TupleDesc desc = RelationGetDescr(td->tg_relation);
    bool isnull;
    Oid old_relid = InvalidOid, new_relid = InvalidOid;
    if (!TRIGGER_FIRED_BY_INSERT(td->tg_event))
        old_relid = DatumGetObjectId(heap_getattr(td->tg_trigtuple, 1, desc, &isnull));
    if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
        new_relid = DatumGetObjectId(heap_getattr(td->tg_trigtuple, 1, desc, &isnull));
    if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
        new_relid = DatumGetObjectId(heap_getattr(td->tg_newtuple, 1, desc, &isnull));
    InternalSession access;
    BeginInternal(&access);
    if (OidIsValid(old_relid) && old_relid != new_relid)
        SyncGuards(old_relid);
    if (OidIsValid(new_relid))
        SyncGuards(new_relid);
    EndInternal(&access);
    return PointerGetDatum(nullptr);
}

// Called by the ddl_command_end event trigger for each table a command created
// or altered. Not granted to PUBLIC.
FENCING_FUNCTION(fencing_on_table_ddl) {
    Oid relid = PG_GETARG_OID(0);
    if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
        PG_RETURN_VOID();
    InternalSession access;
    BeginInternal(&access);
    OnTableDdl(relid);
    CheckAfterTableDdl(relid);
    EndInternal(&access);
    PG_RETURN_VOID();
}
