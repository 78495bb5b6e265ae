// Guard integrity: the guards of a table listed in fencing.protected stay
// installed, enabled and current.
//  * A dumped guard that arrives in a normal restore (new OIDs, maybe new
//    attnums) is replaced by guards installed from the table's policy;
//    pg_upgrade keeps OIDs and attnums and carries the guards over as they are.
//  * DDL on the guards is refused (ALTER TRIGGER ... RENAME, ALTER TABLE ...
//    DISABLE TRIGGER, CREATE OR REPLACE) or undone (DROP TRIGGER), and no
//    BEFORE ROW trigger that sorts after the guard may be added to a fenced
//    table: the event trigger fencing.on_guard_ddl.
//  * fencing.truncate_guard(): on a subscriber, TRUNCATE of a replicated table
//    is refused; in row scope every row leaves a tombstone.
//  * fencing.guard_status() / fencing_verify_guards() report and repair.
#include "core/policy.hpp"
#include "pg/base/boundary.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/guard/install.hpp"
#include "pg/guard/restore.hpp"
#include "pg/types/token_type.hpp"
#include "pg/guard/triggers.hpp"
#include "pg/keys/row_key.hpp"
#include "pg/catalog/subscriber.hpp"
#include "pg/hwm/tombstones.hpp"
#include "pg/types/token_type.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/parsenodes.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
}

namespace fencing::pg {

namespace {

// Whether the relation (or, when partitioned, any leaf) carries a fencing trigger.
bool CarriesGuard(Oid relid, const FencingFunctions &fns) {
    ListCell *lc;
    foreach (lc, GuardedRelations(relid, NoLock)) {
        TriggerInfo *triggers;
        int n = ReadTriggers(lfirst_oid(lc), &triggers);
        for (int i = 0; i < n; ++i)
            if (IsFencingFunction(fns, triggers[i].fn))
                return true;
    }
    return false;
}

bool LeafHasPrimaryKey(Oid leaf) {
    Relation rel = table_open(leaf, AccessShareLock);
    PrimaryKey pk;
    bool has = GetPrimaryKey(rel, &pk);
    table_close(rel, AccessShareLock);
    return has;
}

// One guarded relation's check against its policy: what its guard's
// arguments must be, and which fencing triggers were found.
struct LeafCheck {
    Oid leaf;
    const ProtectedRow *row;
    const FencingFunctions *fns;
    StringInfo out;  // the problems, "; "-separated
    char expected[kPolicyTextCapacity];
    const char *expected_ns;
    char *guard_name;
    bool guard, recheck, move_recheck, truncate;
};

void Problem(const LeafCheck &c, const char *what, const char *name) {
    if (c.out->len > 0)
        appendStringInfoString(c.out, "; ");
    appendStringInfo(c.out, "%s: %s%s%s%s", RelName(c.leaf), what, name ? " \"" : "",
                     name ? name : "", name ? "\"" : "");
}

// The guard's expected arguments; false (a problem) when a policy column is
// missing from the leaf.
bool ExpectGuardArguments(LeafCheck *c) {
    const ProtectedRow &row = *c->row;
    int token_attnum = get_attnum(c->leaf, row.token_column);
    int resource_attnum =
        row.scope == Scope::kResource ? get_attnum(c->leaf, row.resource_column) : 0;
    if (token_attnum <= 0 || resource_attnum < 0 ||
        (row.scope == Scope::kResource && resource_attnum == 0)) {
        Problem(*c,
                token_attnum <= 0 ? "token column missing, writes are not fenced:"
                                  : "policy column missing",
                token_attnum <= 0 ? row.token_column : nullptr);
        return false;
    }
    // A column of the policy's name that is no token column (dropped and
    // added again as another type): the guard cannot read a token from it.
    Oid token_type = get_atttype(c->leaf, token_attnum);
    if (!IsTokenColumnType(token_type)) {
        Problem(*c,
                psprintf("token column of type %s, not fencing_token or bigint, writes are not "
                         "fenced:",
                         format_type_be(token_type)),
                row.token_column);
        return false;
    }
    EncodePolicy(LeafPolicy(row, token_attnum, resource_attnum), c->expected);
    c->expected_ns = row.scope == Scope::kResource ? row.resource_namespace : "";
    c->guard_name = GuardTriggerName(kGuardName, c->leaf);
    return true;
}

void CheckGuard(LeafCheck *c, const TriggerInfo &t) {
    const int16 guard_type = TRIGGER_TYPE_ROW | TRIGGER_TYPE_BEFORE | TRIGGER_TYPE_INSERT |
                             TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE;
    const char *name = NameStr(t.name);
    c->guard = true;
    if (!TriggerEnabled(t))
        Problem(*c, "guard disabled", name);
    else if (t.internal)
        Problem(*c, "internal guard (pg_dump and pg_upgrade drop it)", name);
    else if (strcmp(name, c->guard_name) != 0 || t.type != guard_type ||
             (t.nargs != 2 && t.nargs != 3) || t.args[0] == nullptr ||
             strcmp(t.args[0], c->expected) != 0 || t.args[1] == nullptr ||
             strcmp(t.args[1], c->expected_ns) != 0)
        Problem(*c, "stale guard", name);
    else if (t.nargs == 3)
        Problem(*c,
                psprintf("restored without its fencing state, every write refused (TF004) until "
                         "the state is restored or fencing_reset_restored() accepts its loss: %s",
                         t.args[2] != nullptr ? t.args[2] : ""),
                nullptr);
}

// The AFTER INSERT recheck, or the AFTER UPDATE OF <key> one.
void CheckRecheck(LeafCheck *c, const TriggerInfo &t) {
    if (TRIGGER_FOR_UPDATE(t.type))
        c->move_recheck = true;
    else
        c->recheck = true;
    if (!TriggerEnabled(t) || t.internal)
        Problem(*c, t.internal ? "internal recheck trigger" : "recheck trigger disabled",
                NameStr(t.name));
}

void CheckTruncate(LeafCheck *c, const TriggerInfo &t) {
    const char *name = NameStr(t.name);
    c->truncate = true;
    if (!TriggerEnabled(t))
        Problem(*c, "truncate trigger disabled", name);
    else if (strcmp(name, TruncateGuardName(c->row->scope, c->leaf)) != 0)
        Problem(*c, "stale truncate trigger", name);
}

void CheckTrigger(LeafCheck *c, const TriggerInfo &t) {
    const FencingFunctions &fns = *c->fns;
    if (t.fn == fns.guard && OidIsValid(t.fn))
        CheckGuard(c, t);
    else if (t.fn == fns.recheck && OidIsValid(t.fn))
        CheckRecheck(c, t);
    else if (t.fn == fns.truncate && OidIsValid(t.fn))
        CheckTruncate(c, t);
    else if (TriggerEnabled(t) && CanChangeRows(t.type) &&
             strcmp(NameStr(t.name), c->guard_name) > 0)
        Problem(*c, "trigger runs after the guard and can change the token:", NameStr(t.name));
}

void ReportMissingTriggers(const LeafCheck &c) {
    Scope scope = c.row->scope;
    if (!c.guard)
        Problem(c, "guard missing", nullptr);
    if (scope == Scope::kRow && !c.recheck)
        Problem(c, "recheck trigger missing", nullptr);
    if (scope == Scope::kRow && !c.move_recheck && LeafHasPrimaryKey(c.leaf))
        Problem(c, "key-move recheck trigger missing", nullptr);
    if (OidIsValid(c.fns->truncate) && !c.truncate)
        Problem(c, "truncate trigger missing", nullptr);
}

// What is wrong with the fencing triggers of one guarded relation, appended
// to out.
void CheckLeaf(Oid leaf, const ProtectedRow &row, const FencingFunctions &fns, StringInfo out) {
    LeafCheck c = {};
    c.leaf = leaf;
    c.row = &row;
    c.fns = &fns;
    c.out = out;
    if (!ExpectGuardArguments(&c))
        return;
    TriggerInfo *triggers;
    int n = ReadTriggers(leaf, &triggers);
    for (int i = 0; i < n; ++i) CheckTrigger(&c, triggers[i]);
    ReportMissingTriggers(c);
}

// NULL when relid is not protected or its guards match its policy; else what
// is wrong, in the current memory context. Inside an internal session.
char *GuardProblem(Oid relid, MemoryContext result_context) {
    if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
        return nullptr;
    ProtectedRow row;
    if (!ReadProtectedRow(relid, &row))
        return nullptr;
    FencingFunctions fns = LookupFencingFunctions();
    StringInfoData out;
    initStringInfo(&out);
    ListCell *lc;
    foreach (lc, GuardedRelations(relid, NoLock)) CheckLeaf(lfirst_oid(lc), row, fns, &out);
    return out.len > 0 ? MemoryContextStrdup(result_context, out.data) : nullptr;
}

[[noreturn]] void RefuseGuardDdl(const char *what, Oid relid) {
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("cannot %s the fencing guard of table %s", what, RelName(relid)),
             errdetail("Every write a session of this server makes to a table listed in "
                       "fencing_protected is fenced."),
             errhint("fencing_unprotect() stops fencing the table. To disable other triggers, "
                     "name them.")));
}

// The guard fires in origin mode only: for this server's sessions, not for
// logical replication's apply (session_replication_role = replica), which
// replays writes its publisher has fenced, with the publisher's fencing state
// in the same transactions.
[[noreturn]] void RefuseGuardFiringMode(const char *mode, Oid relid) {
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("cannot make the fencing guard of table %s ENABLE %s", RelName(relid), mode),
             errdetail("The guard fences the writes of this server's sessions. Logical "
                       "replication's apply does not fire it: it replays writes the publisher "
                       "has already fenced, and the publisher's HWMs arrive in the same "
                       "transactions. ENABLE REPLICA would leave this server's own writes "
                       "unfenced; ENABLE ALWAYS would judge the publisher's accepted writes again "
                       "against this server's state and stall the subscription on the first one "
                       "it refuses."),
             errhint("To replicate a fenced table, publish the extension's state with it: "
                     "fencing_publish() (docs/logical-replication.md).")));
}

void BeforeCreateTrigger(CreateTrigStmt *stmt, const FencingFunctions &fns) {
    Oid relid = RangeVarGetRelid(stmt->relation, NoLock, true);
    if (!OidIsValid(relid))
        return;
    const TriggerInfo *existing = ReadTrigger(relid, stmt->trigname);
    Oid fn = LookupFuncName(stmt->funcname, 0, nullptr, true);
    if (IsFencingFunction(fns, fn)) {
        // A guard from a dump (normal restore: another OID, other attnums).
        // Make room for it; ddl_command_end installs the guards from the
        // policy. Only a superuser may reach fencing's functions at all.
        if (existing != nullptr && IsFencingFunction(fns, existing->fn) && superuser()) {
            ObjectAddress addr;
            ObjectAddressSet(addr, TriggerRelationId, existing->oid);
            performDeletion(&addr, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
        }
        return;
    }
    if (existing != nullptr && stmt->replace && IsFencingFunction(fns, existing->fn))
        RefuseGuardDdl("replace", relid);
    if (stmt->row && stmt->timing == TRIGGER_TYPE_BEFORE &&
        (stmt->events & (TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE)) != 0 &&
        SortsAfterGuard(stmt->trigname) && CarriesGuard(relid, fns))
        RefuseLateTrigger(stmt->trigname, relid);
}

void AfterCreateTrigger(CreateTrigStmt *stmt, const FencingFunctions &fns) {
    Oid relid = RangeVarGetRelid(stmt->relation, NoLock, true);
    Oid fn = LookupFuncName(stmt->funcname, 0, nullptr, true);
    if (!OidIsValid(relid) || !IsFencingFunction(fns, fn))
        return;
    // A guard created by a statement (a restored dump, or by hand): its
    // arguments say the policy it was dumped under (pg/guard/restore.hpp).
    if (fn == fns.guard && AdoptDumpedGuard(relid, stmt))
        return;
    // Another fencing trigger: the table's policy decides what its guards are.
    InternalSession access;
    BeginInternal(&access);
    ProtectedRow row;
    Oid holder = PolicyHolder(relid, &row);
    if (!OidIsValid(holder)) {
        // The guard would judge with another database's OIDs and attnums: drop it.
        ObjectAddress addr;
        ObjectAddressSet(addr, TriggerRelationId, get_trigger_oid(relid, stmt->trigname, false));
        performDeletion(&addr, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
        ereport(
            WARNING,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("table %s is not fenced: it has no fencing policy in this database",
                    RelName(relid)),
             errdetail("Fencing trigger \"%s\" (from a dump?) was not created.", stmt->trigname),
             errhint("Restoring fencing's policies (the data of a whole-database dump) "
                     "installs the guards; or call fencing_protect() on the table.")));
        EndInternal(&access);
        return;
    }
    RepairGuards(holder);
    EndInternal(&access);
}

void AfterDropTrigger(DropStmt *stmt) {
    ListCell *lc;
    foreach (lc, stmt->objects) {
        List *names = static_cast<List *>(lfirst(lc));
        if (list_length(names) < 2 || !IsFencingTriggerName(strVal(llast(names))))
            continue;
        Oid relid = RangeVarGetRelid(
            makeRangeVarFromNameList(list_truncate(list_copy(names), list_length(names) - 1)),
            NoLock, true);
        if (!OidIsValid(relid))
            continue;
        InternalSession access;
        BeginInternal(&access);
        ProtectedRow row;
        Oid holder = PolicyHolder(relid, &row);
        if (OidIsValid(holder) && GuardProblem(holder, CurrentMemoryContext) != nullptr) {
            RepairGuards(holder);
            ereport(NOTICE, (errmsg("fencing guard of table %s re-installed", RelName(relid)),
                             errdetail("A table listed in fencing_protected keeps its guard."),
                             errhint("fencing_unprotect() stops fencing the table.")));
        }
        EndInternal(&access);
    }
}

// fencing.protected's own triggers install the guards of the tables it lists.
bool IsPolicyTable(Oid relid) {
    Oid schema = ExtensionSchemaOid(true);
    return OidIsValid(schema) && relid == get_relname_relid("protected", schema);
}

void BeforeAlterTable(AlterTableStmt *stmt, const FencingFunctions &fns) {
    if (stmt->relation == nullptr)
        return;
    Oid relid = RangeVarGetRelid(stmt->relation, NoLock, true);
    if (!OidIsValid(relid))
        return;
    ListCell *lc;
    foreach (lc, stmt->cmds) {
        auto *cmd = static_cast<AlterTableCmd *>(lfirst(lc));
        if (IsPolicyTable(relid) &&
            (cmd->subtype == AT_DisableTrigAll || cmd->subtype == AT_DisableTrigUser ||
             cmd->subtype == AT_DisableTrig || cmd->subtype == AT_EnableTrig ||
             cmd->subtype == AT_EnableReplicaTrig))
            ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                            errmsg("cannot change the triggers of fencing.protected"),
                            errdetail("They install the guards of the tables it lists.")));
        switch (cmd->subtype) {
            case AT_DisableTrigAll:
            case AT_DisableTrigUser:
                if (CarriesGuard(relid, fns))
                    RefuseGuardDdl("disable", relid);
                break;
            case AT_DisableTrig:
            case AT_EnableReplicaTrig:
            case AT_EnableAlwaysTrig: {
                const TriggerInfo *t = ReadTrigger(relid, cmd->name);
                if (t != nullptr && IsFencingFunction(fns, t->fn)) {
                    if (cmd->subtype == AT_DisableTrig)
                        RefuseGuardDdl("disable", relid);
                    RefuseGuardFiringMode(
                        cmd->subtype == AT_EnableAlwaysTrig ? "ALWAYS" : "REPLICA", relid);
                }
                break;
            }
            default:
                break;
        }
    }
}

void BeforeRenameTrigger(RenameStmt *stmt, const FencingFunctions &fns) {
    Oid relid = RangeVarGetRelid(stmt->relation, NoLock, true);
    if (!OidIsValid(relid))
        return;
    const TriggerInfo *t = ReadTrigger(relid, stmt->subname);
    if (t == nullptr)
        return;
    if (IsFencingFunction(fns, t->fn))
        RefuseGuardDdl("rename", relid);
    if (TriggerEnabled(*t) && CanChangeRows(t->type) && SortsAfterGuard(stmt->newname) &&
        CarriesGuard(relid, fns))
        RefuseLateTrigger(stmt->newname, relid);
}

// ALTER TRIGGER/INDEX ... DEPENDS ON EXTENSION x: DROP EXTENSION x would then
// drop the object with it, past every check on DROP TRIGGER and ALTER TABLE.
// Refused for fencing triggers and for the indexes of fenced tables (a
// row-scope primary key keys the tombstones).
void BeforeDependsOnExtension(AlterObjectDependsStmt *stmt, const FencingFunctions &fns) {
    if (stmt->remove || stmt->relation == nullptr)
        return;
    Oid relid = RangeVarGetRelid(stmt->relation, NoLock, true);
    if (!OidIsValid(relid))
        return;
    if (stmt->objectType == OBJECT_TRIGGER) {
        const TriggerInfo *t = ReadTrigger(relid, strVal(llast(castNode(List, stmt->object))));
        if (t != nullptr && IsFencingFunction(fns, t->fn))
            RefuseGuardDdl("make an extension own", relid);
    } else if (stmt->objectType == OBJECT_INDEX) {
        Oid table = IndexGetRelation(relid, true);
        ProtectedRow row;
        InternalSession access;
        BeginInternal(&access);
        bool fenced = OidIsValid(table) && OidIsValid(PolicyHolder(table, &row));
        EndInternal(&access);
        if (fenced)
            ereport(ERROR,
                    (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                     errmsg("cannot make an extension own index %s of fenced table %s",
                            RelName(relid), RelName(table)),
                     errdetail("Dropping the extension would drop the index with it, past the "
                               "checks that keep a fenced table's key and high-water marks."),
                     errhint("fencing_unprotect() the table first.")));
    }
}

// Before CREATE TRIGGER, ALTER TABLE or ALTER INDEX locks its table: the
// tree's policy lock (LockPolicyTree), so that two commands on one partition
// tree run their guard work one after the other instead of deadlocking.
void LockPolicyTreeOf(Node *tree) {
    RangeVar *target = nullptr;
    if (IsA(tree, CreateTrigStmt))
        target = castNode(CreateTrigStmt, tree)->relation;
    else if (IsA(tree, AlterTableStmt))
        target = castNode(AlterTableStmt, tree)->relation;
    Oid relid = target != nullptr ? RangeVarGetRelid(target, NoLock, true) : InvalidOid;
    if (OidIsValid(relid))
        LockPolicyTree(relid);
}

}  // namespace

}  // namespace fencing::pg

using namespace fencing;
using namespace fencing::pg;

// BEFORE TRUNCATE, statement level, every scope: on a subscriber, refused
// while a subscription replicates the table (as any local write). In row
// scope every row then leaves a tombstone under its primary key, as a DELETE
// of it would; TRUNCATE holds an ACCESS EXCLUSIVE lock, so the rows read are
// all there is. Resource and table HWMs stay as they are: nothing to write.
FENCING_FUNCTION(fencing_truncate_guard) {
    TriggerData *td = TriggerCallData(fcinfo, "fencing.truncate_guard()");
    if (!TRIGGER_FIRED_BY_TRUNCATE(td->tg_event) || !TRIGGER_FIRED_BEFORE(td->tg_event))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("fencing.truncate_guard() must fire BEFORE TRUNCATE")));
    Relation rel = td->tg_relation;
    Policy policy;
    if (!GuardPolicy(RelationGetRelid(rel), &policy))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("table %s has a fencing truncate trigger but no guard",
                               RelName(RelationGetRelid(rel))),
                        errhint("SELECT * FROM fencing_verify_guards(true);")));
    RefuseWriteOnSubscriber(rel, policy.home_relid);
    if (policy.scope != Scope::kRow)
        return NullPointerDatum();
    TombstoneEveryRow(rel, policy.home_relid, policy.token_attnum);
    return NullPointerDatum();
}

// fencing.guard_status(regclass): NULL when the table's guards are in place.
FENCING_FUNCTION(fencing_guard_status) {
    Oid relid = PG_GETARG_OID(0);
    MemoryContext caller = CurrentMemoryContext;
    InternalSession access;
    BeginInternal(&access);
    char *problem = GuardProblem(relid, caller);
    EndInternal(&access);
    if (problem == nullptr)
        PG_RETURN_NULL();
    PG_RETURN_TEXT_P(cstring_to_text(problem));
}

// Tables the caller may read that have a fencing_token column but no policy
// (a partial restore in replica mode, fencing_unprotect(), auto-protection
// switched off): their writes are judged by nothing. Reported, not
// repaired: which policy they need is the owner's call.
static void ReportUnfencedTokenColumns(ReturnSetInfo *rsinfo, MemoryContext caller) {
    InternalSession access;
    BeginInternal(&access);
    Oid types[] = {OIDOID};
    Datum args[] = {ObjectIdGetDatum(FencingTokenTypeOid())};
    RunInternalSql(
        "SELECT c.oid, pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', '"
        "       ORDER BY a.attnum)"
        "  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_attribute a"
        "    ON a.attrelid OPERATOR(pg_catalog.=) c.oid"
        " WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition"
        "   AND c.relpersistence OPERATOR(pg_catalog.<>) 't'"
        "   AND a.atttypid OPERATOR(pg_catalog.=) $1 AND a.attnum OPERATOR(pg_catalog.>) 0"
        "   AND NOT a.attisdropped"
        "   AND c.relnamespace OPERATOR(pg_catalog.<>) 'fencing'::pg_catalog.regnamespace"
        "   AND NOT EXISTS (SELECT 1 FROM fencing.protected p"
        "                    WHERE p.relid OPERATOR(pg_catalog.=) c.oid)"
        "   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t"
        "                    WHERE t.tgrelid OPERATOR(pg_catalog.=) c.oid"
        "                      AND t.tgname OPERATOR(pg_catalog.=) 'zz_fencing_swapped_out')"
        " GROUP BY c.oid ORDER BY c.oid",
        1, types, args, nullptr, true);
    uint64 n = SPI_processed;
    Oid *relids = static_cast<Oid *>(MemoryContextAlloc(caller, sizeof(Oid) * (n + 1)));
    char **columns = static_cast<char **>(MemoryContextAlloc(caller, sizeof(char *) * (n + 1)));
    for (uint64 i = 0; i < n; ++i) {
        bool isnull;
        relids[i] = DatumGetObjectId(
            SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
        columns[i] = MemoryContextStrdup(
            caller, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
    }
    EndInternal(&access);
    for (uint64 i = 0; i < n; ++i) {
        if (pg_class_aclcheck(relids[i], GetUserId(), ACL_SELECT) != ACLCHECK_OK)
            continue;
        char *problem = psprintf(
            "fencing_token column %s not fenced: the table has no fencing "
            "policy (fencing_protect() fences it)",
            columns[i]);
        Datum values[3] = {ObjectIdGetDatum(relids[i]), CStringGetTextDatum(problem),
                           BoolGetDatum(false)};
        bool nulls[3] = {false, false, false};
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
}

// fencing_verify_guards(repair): every protected table the caller may read
// whose guards are missing, disabled, internal or stale; with repair, the
// caller's own tables (a superuser's: all) get their guards re-installed.
namespace fencing::pg {
namespace {

// Whether every guarded relation of relid has its policy's columns, the
// token column of a token type: else no guard can be installed from the
// policy, and a repair would only fail.
bool PolicyColumnsPresent(Oid relid) {
    InternalSession access;
    BeginInternal(&access);
    ProtectedRow row;
    bool present = ReadProtectedRow(relid, &row);
    EndInternal(&access);
    ListCell *lc;
    foreach (lc, present ? GuardedRelations(relid, NoLock) : NIL) {
        AttrNumber token = get_attnum(lfirst_oid(lc), row.token_column);
        present =
            present && token > 0 && IsTokenColumnType(get_atttype(lfirst_oid(lc), token)) &&
            (row.scope != Scope::kResource || get_attnum(lfirst_oid(lc), row.resource_column) > 0);
    }
    return present;
}

}  // namespace
}  // namespace fencing::pg

FENCING_FUNCTION(fencing_verify_guards) {
    bool repair = !PG_ARGISNULL(0) && PG_GETARG_BOOL(0);
    InitMaterializedSRF(fcinfo, 0);
    auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    MemoryContext caller = CurrentMemoryContext;
    List *relids = ProtectedRelids();
    InternalSession access;
    ListCell *lc;
    foreach (lc, relids) {
        Oid relid = lfirst_oid(lc);
        // The rows fencing_protected shows this caller.
        if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)) ||
            pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
            continue;
        BeginInternal(&access);
        char *problem = GuardProblem(relid, caller);
        EndInternal(&access);
        if (problem == nullptr)
            continue;
        bool repaired = false;
        if (repair && OwnsRelation(relid, GetUserId()) && PolicyColumnsPresent(relid)) {
            BeginInternal(&access);
            RepairGuards(relid);
            repaired = GuardProblem(relid, caller) == nullptr;
            EndInternal(&access);
        }
        Datum values[3] = {ObjectIdGetDatum(relid), CStringGetTextDatum(problem),
                           BoolGetDatum(repaired)};
        bool nulls[3] = {false, false, false};
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    ReportUnfencedTokenColumns(rsinfo, caller);
    return NullPointerDatum();
}

// Event trigger: ddl_command_start on CREATE TRIGGER, ALTER TRIGGER,
// ALTER TABLE; ddl_command_end on CREATE TRIGGER, DROP TRIGGER. Enabled ALWAYS,
// so restores under session_replication_role = replica are covered too.
FENCING_FUNCTION(fencing_on_guard_ddl) {
    if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("fencing.on_guard_ddl() can only be called as an event trigger")));
    auto *event = reinterpret_cast<EventTriggerData *>(fcinfo->context);
    bool at_end = strcmp(event->event, "ddl_command_end") == 0;
    Node *tree = event->parsetree;
    FencingFunctions fns = LookupFencingFunctions();
    if (!at_end)
        LockPolicyTreeOf(tree);
    switch (nodeTag(tree)) {
        case T_CreateTrigStmt:
            if (at_end)
                AfterCreateTrigger(castNode(CreateTrigStmt, tree), fns);
            else
                BeforeCreateTrigger(castNode(CreateTrigStmt, tree), fns);
            break;
        case T_DropStmt:
            if (at_end && castNode(DropStmt, tree)->removeType == OBJECT_TRIGGER)
                AfterDropTrigger(castNode(DropStmt, tree));
            break;
        case T_AlterTableStmt:
            if (!at_end)
                BeforeAlterTable(castNode(AlterTableStmt, tree), fns);
            break;
        case T_RenameStmt:
            if (!at_end && castNode(RenameStmt, tree)->renameType == OBJECT_TRIGGER)
                BeforeRenameTrigger(castNode(RenameStmt, tree), fns);
            break;
        case T_AlterObjectDependsStmt:
            if (!at_end)
                BeforeDependsOnExtension(castNode(AlterObjectDependsStmt, tree), fns);
            break;
        default:
            break;
    }
    PG_RETURN_VOID();
}
