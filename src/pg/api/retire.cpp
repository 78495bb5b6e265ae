// Retirement: idle per-key state folded into a floor, the explicit opt-in,
// and the automatic policy.
//   fencing_enable_retirement(namespace text | target regclass, idle interval)
//   fencing_disable_retirement(namespace text | target regclass)
//   fencing_retire(namespace text | target regclass, idle interval, max_entries bigint)
//   fencing_retire_due(max_entries bigint)
// A namespace needs its owner's rights, a table its owner's (the table
// fencing_protect() named: a partitioned table's tombstones are kept under
// it, and so is its floor). Each batch is one statement sequence in the
// caller's transaction: candidates locked FOR UPDATE SKIP LOCKED (an entry
// being written is skipped; its locked version must still be idle), deleted,
// and the floor raised to GREATEST(floor, the highest deleted). Nothing here
// lowers anything.
#include "pg/api/retire.hpp"

#include <algorithm>

#include "pg/api/hwm_args.hpp"
#include "pg/base/boundary.hpp"
#include "pg/base/compat.hpp"
#include "pg/base/guc.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/catalog/namespaces.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/catalog/subscriber.hpp"
#include "pg/hwm/store.hpp"
#include "pg/hwm/store_shape.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/value.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"
}

namespace fencing::pg {
namespace {

constexpr int64 kUnlimited = PG_INT64_MAX;

// The 1.5 objects retirement needs; 55000 when the extension's SQL is older
// than the library (every other path keeps working without them).
void RequireRetirementObjects() {
    if (OidIsValid(hwm::StoreRelid("resource_floor")) &&
        OidIsValid(hwm::StoreRelid("tombstone_floor")) && StoreHasRaisedAt("resource_hwm") &&
        StoreHasRaisedAt("row_tombstone"))
        return;
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("retirement needs the fencing extension's 1.5 objects"),
                    errdetail("The installed SQL objects are older than the loaded library."),
                    errhint("Run ALTER EXTENSION fencing UPDATE.")));
}

// idle: NULL allowed (the policy) or not (a retirement); never negative.
Datum IdleArg(FunctionCallInfo fcinfo, int n, bool allow_null, bool *isnull) {
    *isnull = PG_ARGISNULL(n);
    if (*isnull) {
        if (!allow_null)
            ereport(ERROR,
                    (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("idle must not be NULL")));
        return (Datum)0;
    }
    Datum idle = PG_GETARG_DATUM(n);
    Interval zero = {};
    if (DatumGetBool(DirectFunctionCall2(interval_lt, idle, IntervalPGetDatum(&zero))))
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("idle must not be negative")));
    return idle;
}

int64 MaxEntriesArg(FunctionCallInfo fcinfo, int n) {
    if (PG_ARGISNULL(n))
        return kUnlimited;
    int64 max_entries = PG_GETARG_INT64(n);
    if (max_entries < 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("max_entries must not be negative")));
    return max_entries;
}

// The row-scope table fencing_protect() named, owned by the caller.
Oid RetirableTable(FunctionCallInfo fcinfo) {
    ProtectedRow row;
    Oid relid = RequireProtectedTarget(fcinfo, &row);
    RequireRelationOwner(relid);
    if (row.scope != Scope::kRow)
        ereport(ERROR,
                (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                 errmsg("table %s is fenced in %s scope and keeps no tombstones", RelName(relid),
                        row.scope == Scope::kResource ? "resource" : "table"),
                 row.scope == Scope::kResource ? errhint("Retire its namespace %s instead.",
                                                         quote_literal_cstr(row.resource_namespace))
                                               : 0));
    return relid;
}

// The floor row's enabled flag, the row locked until the transaction ends;
// false in *exists when there is none. nowait: 55P03 at once when another
// transaction holds it.
bool FloorEnabled(bool table, Datum key, bool *exists, bool nowait) {
    Oid types[] = {table ? Oid{OIDOID} : Oid{TEXTOID}};
    Datum values[] = {key};
    RunInternalSql(psprintf("%s FOR NO KEY UPDATE%s",
                            table ? "SELECT enabled FROM fencing.tombstone_floor"
                                    " WHERE relid OPERATOR(pg_catalog.=) $1"
                                  : "SELECT enabled FROM fencing.resource_floor"
                                    " WHERE namespace OPERATOR(pg_catalog.=) $1",
                            nowait ? " NOWAIT" : ""),
                   1, types, values, nullptr, false);
    *exists = SPI_processed > 0;
    if (!*exists)
        return false;
    bool isnull;
    return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

void RequireEnabled(bool table, Datum key, const char *what, bool nowait) {
    bool exists;
    if (FloorEnabled(table, key, &exists, nowait))
        return;
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("retirement is not enabled for %s", what),
                    exists ? errdetail("It was disabled with fencing_disable_retirement().") : 0,
                    errhint("Call fencing_enable_retirement() for it first: a brand-new key's "
                            "first token must then be above the floor.")));
}

// On a logical subscriber retirement would delete rows that the publisher's
// later raises update (apply skips an UPDATE of a missing row): refused, as
// a reset is.
int64 RetireNamespace(const char *name_space, Datum idle, int64 max_entries, bool nowait = false) {
    RefuseResetOnSubscriber("resource_hwm", "retire resource high-water marks");
    RefuseResetOnSubscriber("lease", "retire leases");
    RequireEnabled(false, CStringGetTextDatum(name_space),
                   psprintf("namespace %s", quote_literal_cstr(name_space)), nowait);
    int64 total = 0;
    char *cursor = pstrdup("");
    bool done = false;
    while (!done && total < max_entries) {
        CHECK_FOR_INTERRUPTS();
        int64 limit = std::min<int64>(RetireBatchSize(), max_entries - total);
        total += RetireResourceBatch(name_space, idle, limit, &cursor, &done);
    }
    return total;
}

int64 RetireTable(Oid relid, Datum idle, int64 max_entries, bool nowait = false) {
    RefuseResetOnSubscriber("row_tombstone", "retire tombstones");
    RequireEnabled(true, ObjectIdGetDatum(relid), psprintf("table %s", RelName(relid)), nowait);
    // No transaction that keeps the floor it read is running, and none
    // starts before this one ends.
    LockFloorForRetirement(relid, nowait);
    int64 total = 0;
    // Keys are never empty arrays: '{}' sorts before every one.
    Datum key_cursor = PointerGetDatum(construct_empty_array(TEXTOID));
    while (total < max_entries) {
        CHECK_FOR_INTERRUPTS();
        int64 limit = std::min<int64>(RetireBatchSize(), max_entries - total);
        int64 retired = RetireTombstoneBatch(relid, idle, limit, &key_cursor);
        total += retired;
        if (retired < limit)
            break;
    }
    return total;
}

void SetPolicy(bool table, Datum key, bool enable, Datum idle, bool idle_null) {
    Oid types[] = {table ? Oid{OIDOID} : Oid{TEXTOID}, INTERVALOID};
    Datum values[] = {key, idle};
    char nulls[] = {' ', idle_null ? 'n' : ' '};
    if (!enable) {
        RunInternalSql(table ? "UPDATE fencing.tombstone_floor SET enabled = false"
                               " WHERE relid OPERATOR(pg_catalog.=) $1"
                             : "UPDATE fencing.resource_floor SET enabled = false"
                               " WHERE namespace OPERATOR(pg_catalog.=) $1",
                       1, types, values, nulls, false);
        return;
    }
    RunInternalSql(table ? "INSERT INTO fencing.tombstone_floor (relid, idle) VALUES ($1, $2)"
                           " ON CONFLICT (relid) DO UPDATE SET enabled = true, idle = excluded.idle"
                         : "INSERT INTO fencing.resource_floor (namespace, idle) VALUES ($1, $2)"
                           " ON CONFLICT (namespace) DO UPDATE"
                           " SET enabled = true, idle = excluded.idle",
                   2, types, values, nulls, false);
}

// A quoted name with no cast resolves to the text overload: 'jobs' would
// enable a namespace called jobs while the caller meant the table. The table
// the name reads as (as regclass would read it: the caller's search path, so
// before the internal session), or InvalidOid.
Oid TableNamed(const char *name) {
    char *copy = pstrdup(name);
    List *parts = NIL;
    if (!SplitIdentifierString(copy, '.', &parts) || list_length(parts) < 1 ||
        list_length(parts) > 3)
        return InvalidOid;
    List *names = NIL;
    ListCell *lc;
    foreach (lc, parts) names = lappend(names, makeString(static_cast<char *>(lfirst(lc))));
    return RangeVarGetRelid(makeRangeVarFromNameList(names), NoLock, true);
}

// A name that is no namespace in use (unclaimed) but a fenced table's is
// refused: the table is named with ::regclass, the namespace with
// fencing_enable_namespace_retirement(). Inside an internal session.
void RefuseTableNamedAsNamespace(const char *name_space, Oid table) {
    ProtectedRow row;
    if (!OidIsValid(table) || strcmp(name_space, kDefaultNamespace) == 0 ||
        OidIsValid(NamespaceOwner(name_space)) || !ReadProtectedRow(table, &row))
        return;
    ereport(ERROR,
            (errcode(ERRCODE_AMBIGUOUS_PARAMETER),
             errmsg("%s names fenced table %s, not a resource namespace",
                    quote_literal_cstr(name_space), RelName(table)),
             errdetail("A quoted name without a cast calls the namespace form of "
                       "fencing_enable_retirement(), and no namespace of that name is in use."),
             errhint("For the table, call fencing_enable_retirement(%s::regclass); for a new "
                     "namespace of that name, fencing_enable_namespace_retirement(%s).",
                     quote_literal_cstr(name_space), quote_literal_cstr(name_space))));
}

void EnableNamespaceRetirement(FunctionCallInfo fcinfo, bool refuse_table_name) {
    RequireRetirementObjects();
    bool idle_null;
    Datum idle = IdleArg(fcinfo, 1, true, &idle_null);
    char *name_space = NamespaceArg(fcinfo, 0);
    Oid table = refuse_table_name ? TableNamed(name_space) : InvalidOid;
    InternalSession session;
    BeginInternal(&session);
    RefuseTableNamedAsNamespace(name_space, table);
    // An unclaimed namespace is claimed for the caller, as a first acquire
    // claims it: else the first role to use it later would own the policy.
    RequireNamespaceWriter(name_space, session.saved_user, "enable retirement");
    SetPolicy(false, CStringGetTextDatum(name_space), true, idle, idle_null);
    EndInternal(&session);
}

// The namespace argument, its owner's rights required; inside an internal session.
char *OwnedNamespace(FunctionCallInfo fcinfo, const InternalSession &session, const char *action) {
    char *name_space = NamespaceArg(fcinfo, 0);
    RequireNamespaceOwner(name_space, session.saved_user, action);
    return name_space;
}

// Whether role may run retirement of the policy: the namespace's owner, the
// table's owner (a superuser has both); the table still a row-scope home.
bool MayRetire(Oid role, bool table, Datum key) {
    if (!table) {
        Oid owner = NamespaceOwner(TextDatumGetCString(key));
        return OidIsValid(owner) ? has_privs_of_role(role, owner) : superuser_arg(role);
    }
    Oid relid = DatumGetObjectId(key);
    ProtectedRow row;
    if (!OidIsValid(get_rel_relkind(relid)) || !ReadProtectedRow(relid, &row) ||
        row.scope != Scope::kRow)
        return false;
    return superuser_arg(role) || OwnsObject(RelationRelationId, relid, role);
}

// The table of a policy, for a message; by OID when it was dropped meanwhile
// (retirement takes no lock on the table).
char *PolicyTableName(Oid relid) {
    return get_rel_name(relid) != nullptr ? psprintf("table %s", RelName(relid))
                                          : psprintf("table with OID %u", relid);
}

// One automatic policy in a subtransaction of its own. The policies of many
// owners run in one call (the worker's round, the pg_cron job), so one that
// fails must not stop the others: its owner holding its floor row locked
// (not waited for: skipped this round), an idle whose cutoff is out of range.
// Its work is rolled back, a WARNING names it, and the call goes on; a
// cancel still ends the call.
struct PolicyRun {
    bool table;
    Datum key;
    Datum idle;
    int64 limit;
    int64 retired;
};

void RunPolicy(void *arg) {
    auto *run = static_cast<PolicyRun *>(arg);
    run->retired = run->table ? RetireTable(DatumGetObjectId(run->key), run->idle, run->limit, true)
                              : RetireNamespace(TextDatumGetCString(run->key), run->idle,
                                                run->limit, true);
}

int64 RetireOnePolicy(bool table, Datum key, Datum idle, int64 limit) {
    PolicyRun run = {table, key, idle, limit, 0};
    ErrorData *error = nullptr;
    if (RunInSubTransaction(RunPolicy, &run, &error))
        return run.retired;
    if (error->sqlerrcode == ERRCODE_QUERY_CANCELED)
        ReThrowError(error);
    ereport(WARNING,
            (errcode(error->sqlerrcode),
             errmsg("fencing_retire_due: the retirement policy of %s was skipped: %s",
                    table ? PolicyTableName(DatumGetObjectId(key))
                          : psprintf("namespace %s", quote_literal_cstr(TextDatumGetCString(key))),
                    error->message)));
    return 0;
}

// Every enabled automatic policy of one kind the caller may run.
int64 RetireDueOf(bool table, Oid role, int64 max_entries) {
    RunInternalSql(table ? "SELECT relid::pg_catalog.oid, idle FROM fencing.tombstone_floor"
                           " WHERE enabled AND idle IS NOT NULL ORDER BY relid"
                         : "SELECT namespace, idle FROM fencing.resource_floor"
                           " WHERE enabled AND idle IS NOT NULL ORDER BY namespace COLLATE \"C\"",
                   0, nullptr, nullptr, nullptr, true);
    int n = static_cast<int>(SPI_processed);
    Datum *keys = static_cast<Datum *>(palloc((n > 0 ? n : 1) * sizeof(Datum)));
    Datum *idles = static_cast<Datum *>(palloc((n > 0 ? n : 1) * sizeof(Datum)));
    for (int i = 0; i < n; ++i) {
        bool isnull;
        keys[i] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
        keys[i] = table ? keys[i] : PointerGetDatum(PG_DETOAST_DATUM_COPY(keys[i]));
        Datum idle = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);
        auto *copy = static_cast<Interval *>(palloc(sizeof(Interval)));
        *copy = *DatumGetIntervalP(idle);
        idles[i] = IntervalPGetDatum(copy);
    }
    int64 total = 0;
    for (int i = 0; i < n && total < max_entries; ++i) {
        if (!MayRetire(role, table, keys[i]))
            continue;
        total += RetireOnePolicy(table, keys[i], idles[i], max_entries - total);
    }
    return total;
}

}  // namespace

int64 RetireDue(int64 max_entries) {
    RequireRetirementObjects();
    InternalSession session;
    BeginInternal(&session);
    int64 total = RetireDueOf(false, session.saved_user, max_entries);
    if (total < max_entries)
        total += RetireDueOf(true, session.saved_user, max_entries - total);
    EndInternal(&session);
    return total;
}

}  // namespace fencing::pg

using namespace fencing;
using namespace fencing::pg;

FENCING_FUNCTION(fencing_enable_retirement_namespace) {
    EnableNamespaceRetirement(fcinfo, true);
    PG_RETURN_VOID();
}

// fencing_enable_namespace_retirement(namespace text, idle interval): the
// namespace, whatever tables share its name.
FENCING_FUNCTION(fencing_enable_namespace_retirement) {
    EnableNamespaceRetirement(fcinfo, false);
    PG_RETURN_VOID();
}

FENCING_FUNCTION(fencing_enable_retirement_table) {
    RequireRetirementObjects();
    bool idle_null;
    Datum idle = IdleArg(fcinfo, 1, true, &idle_null);
    Oid relid = RetirableTable(fcinfo);
    InternalSession session;
    BeginInternal(&session);
    SetPolicy(true, ObjectIdGetDatum(relid), true, idle, idle_null);
    EndInternal(&session);
    PG_RETURN_VOID();
}

FENCING_FUNCTION(fencing_disable_retirement_namespace) {
    RequireRetirementObjects();
    InternalSession session;
    BeginInternal(&session);
    char *name_space = OwnedNamespace(fcinfo, session, "disable retirement");
    SetPolicy(false, CStringGetTextDatum(name_space), false, (Datum)0, true);
    EndInternal(&session);
    PG_RETURN_VOID();
}

FENCING_FUNCTION(fencing_disable_retirement_table) {
    RequireRetirementObjects();
    Oid relid = RetirableTable(fcinfo);
    InternalSession session;
    BeginInternal(&session);
    SetPolicy(true, ObjectIdGetDatum(relid), false, (Datum)0, true);
    EndInternal(&session);
    PG_RETURN_VOID();
}

FENCING_FUNCTION(fencing_retire_namespace) {
    RequireRetirementObjects();
    bool idle_null;
    Datum idle = IdleArg(fcinfo, 1, false, &idle_null);
    int64 max_entries = MaxEntriesArg(fcinfo, 2);
    InternalSession session;
    BeginInternal(&session);
    char *name_space = OwnedNamespace(fcinfo, session, "retire its high-water marks");
    int64 retired = RetireNamespace(name_space, idle, max_entries);
    EndInternal(&session);
    PG_RETURN_INT64(retired);
}

FENCING_FUNCTION(fencing_retire_table) {
    RequireRetirementObjects();
    bool idle_null;
    Datum idle = IdleArg(fcinfo, 1, false, &idle_null);
    int64 max_entries = MaxEntriesArg(fcinfo, 2);
    Oid relid = RetirableTable(fcinfo);
    InternalSession session;
    BeginInternal(&session);
    int64 retired = RetireTable(relid, idle, max_entries);
    EndInternal(&session);
    PG_RETURN_INT64(retired);
}

FENCING_FUNCTION(fencing_retire_due) {
    int64 max_entries = MaxEntriesArg(fcinfo, 0);
    PG_RETURN_INT64(RetireDue(max_entries));
}
