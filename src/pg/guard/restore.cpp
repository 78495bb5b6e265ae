// Dumped guards restored without fencing's data (pg/guard/restore.hpp), and
//   fencing_reset_restored(target regclass)  its owner; logged in fencing.reset_log
//   fencing.note_dumped_policy()              BEFORE INSERT ON fencing.protected: a
//                                             dump's policy row arrives
#include "pg/guard/restore.hpp"

#include "core/policy.hpp"
#include "pg/base/boundary.hpp"
#include "pg/base/compat.hpp"
#include "pg/base/errors.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/guard/install.hpp"
#include "pg/guard/restored.hpp"
#include "pg/hwm/lock.hpp"
#include "pg/hwm/policy_carry.hpp"
#include "pg/types/token_type.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "commands/trigger.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace fencing::pg {
namespace {

// "resource scope, strict, on_stale skip, token optional": the parts a
// policy differs from the defaults in, each named once.
const char *PolicySummary(const ProtectedRow &p) {
    return psprintf(
        "%s scope on %s%s%s%s%s%s%s", ScopeName(p.scope), quote_identifier(p.token_column),
        p.scope == Scope::kResource ? ", resource " : "",
        p.scope == Scope::kResource ? quote_identifier(p.resource_column) : "",
        p.scope == Scope::kResource ? psprintf(" in namespace %s", p.resource_namespace) : "",
        p.strict ? ", strict" : "", p.on_stale == OnStale::kSkip ? ", on_stale skip" : "",
        p.require_token ? ", token required" : "");
}

// The live column of desc at attnum: its name and type.
bool ColumnAt(TupleDesc desc, int attnum, char *name, Oid *type) {
    if (attnum <= 0 || attnum > desc->natts || TupleDescAttr(desc, attnum - 1)->attisdropped)
        return false;
    strlcpy(name, NameStr(TupleDescAttr(desc, attnum - 1)->attname), NAMEDATALEN);
    *type = TupleDescAttr(desc, attnum - 1)->atttypid;
    return true;
}

// The token column the dumped guard judged by. pg_dump recreates the columns
// in order, so its attnum names it unless the source had dropped columns
// before it: then the column there is no token column, and the leaf's one
// fencing_token column is taken. False when neither fits.
bool DumpedTokenColumn(TupleDesc desc, int attnum, char *name) {
    Oid type;
    if (ColumnAt(desc, attnum, name, &type) && IsTokenColumnType(type))
        return true;
    int found = 0;
    for (int i = 1; i <= desc->natts; ++i) {
        char candidate[NAMEDATALEN];
        if (ColumnAt(desc, i, candidate, &type) && type == FencingTokenTypeOid() && found++ == 0)
            strlcpy(name, candidate, NAMEDATALEN);
    }
    return found == 1;
}

bool SamePolicy(const ProtectedRow &a, const ProtectedRow &b) {
    bool resource = a.scope == Scope::kResource;
    return strcmp(a.token_column, b.token_column) == 0 && a.scope == b.scope &&
           a.on_stale == b.on_stale && a.strict == b.strict && a.require_token == b.require_token &&
           (!resource || (strcmp(a.resource_column, b.resource_column) == 0 &&
                          strcmp(a.resource_namespace, b.resource_namespace) == 0));
}

// The dumped guard's policy for home, its columns named as on leaf.
void DumpedPolicyRow(Oid leaf, Oid home, const Policy &dumped, const char *name_space,
                     ProtectedRow *out) {
    memset(out, 0, sizeof(*out));
    out->relid = home;
    out->scope = dumped.scope;
    out->on_stale = dumped.on_stale;
    out->strict = dumped.strict;
    out->require_token = dumped.require_token;
    out->resource_namespace = pstrdup(dumped.scope == Scope::kResource ? name_space : "");
    Oid type;
    Relation rel = table_open(leaf, AccessShareLock);
    TupleDesc desc = RelationGetDescr(rel);
    bool found = DumpedTokenColumn(desc, dumped.token_attnum, out->token_column) &&
                 (dumped.scope != Scope::kResource ||
                  ColumnAt(desc, dumped.resource_attnum, out->resource_column, &type));
    table_close(rel, AccessShareLock);
    if (!found)
        ereport(ERROR,
                (errcode(ERRCODE_FENCING_RESTORED_WITHOUT_STATE),
                 errmsg("cannot restore the fencing guard of table %s: its dumped policy names "
                        "columns the table does not have",
                        RelName(leaf)),
                 errdetail("The dumped guard judged by %s column number %d%s.",
                           ScopeName(dumped.scope), dumped.token_attnum,
                           dumped.scope == Scope::kResource
                               ? psprintf(" and resource column number %d", dumped.resource_attnum)
                               : ""),
                 errhint("Call fencing_protect() on the table with its policy.")));
}

// Where the dumped policy goes when no policy fences relid: the table, or the
// root of its partition tree (policies of partitioned tables live there).
Oid RestoredHome(Oid relid) {
    if (!get_rel_relispartition(relid))
        return relid;
    return llast_oid(get_partition_ancestors(relid));
}

}  // namespace

bool AdoptDumpedGuard(Oid relid, const CreateTrigStmt *stmt) {
    Policy dumped;
    int nargs = list_length(stmt->args);
    if ((nargs != 2 && nargs != 3) || !DecodePolicy(strVal(linitial(stmt->args)), &dumped))
        return false;
    const char *mark = nargs == 3 ? strVal(lthird(stmt->args)) : nullptr;
    ProtectedRow want;  // in the caller's memory: an internal session's goes at its end
    DumpedPolicyRow(relid, RestoredHome(relid), dumped, strVal(lsecond(stmt->args)), &want);
    MemoryContext caller = CurrentMemoryContext;
    InternalSession access;
    BeginInternal(&access);
    ProtectedRow current;
    Oid holder = PolicyHolder(relid, &current);
    if (OidIsValid(holder) && SamePolicy(current, want) && mark == nullptr) {
        // This database holds the dumped policy: a whole restore, or the
        // data of one before its schema's triggers.
        RepairGuards(holder);
        EndInternal(&access);
        return true;
    }
    if (OidIsValid(holder)) {
        want.relid = holder;
        current.resource_namespace = MemoryContextStrdup(caller, current.resource_namespace);
    }
    EndInternal(&access);
    if (!OidIsValid(holder)) {
        // What the rows were judged by before: their tokens.
        current = want;
        current.scope = Scope::kRow;
        current.resource_column[0] = '\0';
        current.resource_namespace = pstrdup("");
    }
    if (mark == nullptr)
        mark = psprintf(
            "The table was restored from a dump without fencing's data (pg_dump -t, -n "
            "or -N fencing): its high-water marks outside its rows (tombstones, table "
            "and resource HWMs, floors) are missing. Its policy (%s) is its dumped "
            "guard's.",
            PolicySummary(want));
    // Raised where the dumped policy looks from the rows' tokens, or refused.
    LockAttachExclusive(want.relid);
    LockRelationOid(want.relid, ShareRowExclusiveLock);
    if (get_rel_relkind(want.relid) == RELKIND_PARTITIONED_TABLE)
        (void)find_all_inheritors(want.relid, ShareRowExclusiveLock, nullptr);
    if (PolicyChangeMovesHwms(current, want))
        CarryHwmsAcrossPolicy(current, want);
    BeginInternal(&access);
    SetRestoredMark(want.relid, mark);
    WriteProtectedRow(want);  // fencing.protected_sync installs the marked guards
    EndInternal(&access);
    ereport(WARNING,
            (errcode(ERRCODE_FENCING_RESTORED_WITHOUT_STATE),
             errmsg("table %s was restored without its fencing state: every write to it is "
                    "refused until the state is restored or its loss accepted",
                    RelName(want.relid)),
             errdetail("%s", mark),
             errhint("Restore fencing's data with it (a whole-database dump, or pg_dump -t tbl -t "
                     "'fencing.*'), or call fencing_reset_restored('%s') (its owner; logged).",
                     RelName(want.relid))));
    return true;
}

}  // namespace fencing::pg

using namespace fencing;
using namespace fencing::pg;

// fencing_reset_restored(target): the owner accepts that the table's state
// outside its rows is lost; its guards drop the mark. Logged.
FENCING_FUNCTION(fencing_reset_restored) {
    Oid relid = ExistingRelationArg(fcinfo, 0, "target");
    Oid caller = GetUserId();
    InternalSession access;
    BeginInternal(&access);
    ProtectedRow row;
    Oid holder = PolicyHolder(relid, &row);
    EndInternal(&access);
    if (!OidIsValid(holder))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("table %s is not fenced", RelName(relid)),
                        errhint("fencing_verify_guards() lists the tables restored without "
                                "their fencing state.")));
    RequireRelationOwner(holder);
    LockAttachExclusive(holder);
    BeginInternal(&access);
    const char *mark = RestoredMark(holder);
    if (mark == nullptr) {
        EndInternal(&access);
        PG_RETURN_BOOL(false);
    }
    SetRestoredMark(holder, nullptr);
    RepairGuards(holder);
    Oid types[] = {NAMEOID, TEXTOID};
    Datum values[] = {
        DirectFunctionCall1(namein, CStringGetDatum(GetUserNameFromId(caller, false))),
        CStringGetTextDatum(RelName(holder))};
    RunInternalSql(
        "INSERT INTO fencing.reset_log (reset_by, target, key, old_hwm)"
        " VALUES ($1, $2, 'restored without its fencing state: loss accepted', NULL)",
        2, types, values, nullptr, false);
    EndInternal(&access);
    ereport(LOG, (errmsg("fencing_reset_restored: %s accepted the loss of the fencing state of "
                         "restored table %s",
                         GetUserNameFromId(caller, false), RelName(holder))));
    PG_RETURN_BOOL(true);
}

// fencing.note_dumped_policy(): BEFORE INSERT ON fencing.protected. A dump's
// policy row is arriving: the table's state comes with it, so its guards
// drop the restored-without-state mark. Rows the extension's own code writes
// (internal sessions are security-restricted) are no such arrival; only who
// may write fencing.protected fires it.
FENCING_FUNCTION(fencing_note_dumped_policy) {
    TriggerData *td = TriggerCallData(fcinfo, "fencing.note_dumped_policy()");
    if (!TRIGGER_FIRED_BEFORE(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
        !TRIGGER_FIRED_BY_INSERT(td->tg_event))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("fencing.note_dumped_policy() must be fired as a BEFORE INSERT "
                               "row trigger")));
    bool isnull;
    Datum relid = heap_getattr(td->tg_trigtuple, 1, RelationGetDescr(td->tg_relation), &isnull);
    if (!isnull && !InSecurityRestrictedOperation()) {
        // A table taking a dropped marked table's kept state (drop and
        // recreate) takes its mark too: that state came from no dump.
        Oid table = DatumGetObjectId(relid);
        const char *name = get_rel_name(table);
        const char *kept = name != nullptr
                               ? DroppedMark(quote_qualified_identifier(
                                     get_namespace_name(get_rel_namespace(table)), name))
                               : nullptr;
        SetRestoredMark(table, kept);
    }
    return PointerGetDatum(td->tg_trigtuple);
}
