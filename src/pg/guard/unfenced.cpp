// fencing_allow_unfenced(): see pg/guard/unfenced.hpp.
#include "pg/guard/unfenced.hpp"

#include "pg/base/boundary.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/base/stats.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/partition.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

namespace fencing::pg {
namespace {

// One choice: the table named, the role that made it, the outer role (the
// session's role, or SET ROLE's) and security context it was made in, and
// the subtransaction that made it (after a subtransaction commits, its
// parent). It admits writes made as that role in that same context, and
// writes made as a role owning the table (as foreign-key actions run) only
// while the outer role is still the one that made the choice itself. A
// SECURITY DEFINER function or trigger of the owner that opens the table
// does not open it to its caller's later writes, nor to the foreign-key
// actions those writes cause, which run as the owner.
struct Allowance {
    Oid relid;
    Oid roleid;
    Oid outer_roleid;
    int sec_context;
    SubTransactionId subid;
};

// The choices of the current transaction, in TopTransactionContext; NIL
// between transactions.
List *allowances = NIL;

void OnXactEvent(XactEvent event, void *) {
    switch (event) {
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_PARALLEL_COMMIT:
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PARALLEL_ABORT:
        case XACT_EVENT_PREPARE:
            allowances = NIL;  // its memory goes with TopTransactionContext
            break;
        default:
            break;
    }
}

// A committed subtransaction's choices pass to its parent; an aborted one's
// (and those of the subtransactions inside it, which started later and so
// have higher ids) are dropped.
void OnSubXactEvent(SubXactEvent event, SubTransactionId sub, SubTransactionId parent, void *) {
    ListCell *lc;
    if (event == SUBXACT_EVENT_COMMIT_SUB) {
        foreach (lc, allowances) {
            auto *a = static_cast<Allowance *>(lfirst(lc));
            if (a->subid == sub)
                a->subid = parent;
        }
    } else if (event == SUBXACT_EVENT_ABORT_SUB) {
        foreach (lc, allowances) {
            auto *a = static_cast<Allowance *>(lfirst(lc));
            if (a->subid >= sub)
                allowances = foreach_delete_current(allowances, lc);
        }
    }
}

// Whether relid was opened in this transaction for the current role.
bool Allowed(Oid relid) {
    Oid role;
    int sec_context;
    GetUserIdAndSecContext(&role, &sec_context);
    Oid outer = GetOuterUserId();
    ListCell *lc;
    foreach (lc, allowances) {
        auto *a = static_cast<Allowance *>(lfirst(lc));
        if (a->relid != relid)
            continue;
        if (a->roleid == role && a->outer_roleid == outer && a->sec_context == sec_context)
            return true;
        if (a->roleid == a->outer_roleid && a->outer_roleid == outer && OwnsRelation(relid, role))
            return true;
    }
    return false;
}

void RequireOwnerToAllow(Oid relid) {
    if (!OwnsRelation(relid, GetUserId()))
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("permission denied to allow unfenced writes to table %s", RelName(relid)),
                 errdetail("Only the table's owner, a member of its owning role, or a superuser "
                           "may open it to unfenced writes."),
                 errhint("Ask the owner, or write with a token: SET LOCAL fencing.token inside "
                         "BEGIN ... COMMIT.")));
}

Datum AllowUnfenced(FunctionCallInfo fcinfo) {
    Oid relid = ExistingRelationArg(fcinfo, 0, "target");
    RequireOwnerToAllow(relid);
    if (PG_ARGISNULL(1))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("reason must not be NULL")));
    char *reason = text_to_cstring(PG_GETARG_TEXT_PP(1));
    const char *p = reason;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') ++p;
    if (*p == '\0')
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("reason must not be empty"),
                 errdetail("Unfenced writes are logged with the reason given for them."),
                 errhint("Say why the table is written without a token, e.g. "
                         "'backfill of column x'.")));
    // Ownership was checked above, as the caller.
    InternalSession access;
    BeginInternal(&access);
    ProtectedRow row;
    Oid home = ReadProtectedRow(relid, &row) ? relid : ProtectedAncestor(relid);
    EndInternal(&access);
    if (!OidIsValid(home))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("table %s is not fenced", RelName(relid)),
                        errdetail("Writes to it are not checked, with or without a token.")));
    // A partition is fenced by its home's policy, which only the home's owner
    // may change (fencing_protect()): opening it takes the same rights.
    if (home != relid)
        RequireOwnerToAllow(home);
    if (!Allowed(relid)) {
        MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
        auto *a = static_cast<Allowance *>(palloc(sizeof(Allowance)));
        a->relid = relid;
        GetUserIdAndSecContext(&a->roleid, &a->sec_context);
        a->outer_roleid = GetOuterUserId();
        a->subid = GetCurrentSubTransactionId();
        allowances = lappend(allowances, a);
        MemoryContextSwitchTo(old);
    }
    LogUnfencedAllowed(relid, reason);
    ereport(NOTICE,
            (errmsg("unfenced writes to table %s are allowed until the transaction ends",
                    RelName(relid)),
             errdetail("Writes that carry no token are admitted and counted as unfenced; writes "
                       "that carry one are still fenced."),
             IsTransactionBlock()
                 ? 0
                 : errhint("Outside a transaction block the transaction is this statement alone: "
                           "run BEGIN first.")));
    PG_RETURN_VOID();
}

}  // namespace

void RegisterUnfencedCallbacks() {
    RegisterXactCallback(OnXactEvent, nullptr);
    RegisterSubXactCallback(OnSubXactEvent, nullptr);
}

bool UnfencedWritesAllowed(Relation rel, Oid home_relid) {
    if (allowances == NIL)
        return false;
    Oid relid = RelationGetRelid(rel);
    if (Allowed(home_relid) || Allowed(relid))
        return true;
    if (!rel->rd_rel->relispartition)
        return false;
    ListCell *lc;
    foreach (lc, get_partition_ancestors(relid)) {
        if (Allowed(lfirst_oid(lc)))
            return true;
    }
    return false;
}

}  // namespace fencing::pg

FENCING_FUNCTION(fencing_allow_unfenced) {
    return fencing::pg::AllowUnfenced(fcinfo);
}
