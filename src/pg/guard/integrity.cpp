// Guard integrity: see guard_integrity.hpp.
#include "pg/guard/integrity.hpp"

#include "core/policy.hpp"
#include "pg/base/boundary.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/keys/row_key.hpp"
#include "pg/catalog/subscriber.hpp"
#include "pg/hwm/tombstones.hpp"

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

bool IsTruncateGuardTrigger(const char *tgname) {
    size_t n = strlen(kTruncateName);
    return strncmp(tgname, kTruncateName, n) == 0 && tgname[n] == '_';
}

char *GuardTriggerName(const char *prefix, Oid leaf) {
    return psprintf("%s_%u", prefix, leaf);
}

namespace {

// The truncate trigger's name on leaf for its scope.
char *TruncateGuardName(Scope scope, Oid leaf) {
    return GuardTriggerName(scope == Scope::kRow ? kTruncateName : kTruncateCheckName, leaf);
}

// fencing.<name>() with no arguments; InvalidOid when absent (1.0 SQL). Read
// from the catalog, not looked up by name: the caller may lack USAGE on fencing.
Oid FencingFunctionOid(const char *name) {
    Oid schema = get_namespace_oid("fencing", true);
    if (!OidIsValid(schema))
        return InvalidOid;
    return GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid, CStringGetDatum(name),
                           PointerGetDatum(buildoidvector(nullptr, 0)), ObjectIdGetDatum(schema));
}

struct FencingFunctions {
    Oid guard;
    Oid recheck;
    Oid truncate;
};

FencingFunctions LookupFencingFunctions() {
    return {FencingFunctionOid("guard"), FencingFunctionOid("recheck"),
            FencingFunctionOid("truncate_guard")};
}

bool IsFencingFunction(const FencingFunctions &fns, Oid fn) {
    return OidIsValid(fn) && (fn == fns.guard || fn == fns.recheck || fn == fns.truncate);
}

bool IsFencingTriggerName(const char *name) {
    return IsGuardTrigger(name) || IsRecheckTrigger(name) || IsMoveRecheckTrigger(name) ||
           IsTruncateGuardTrigger(name);
}

// One row of pg_trigger, as far as guard integrity cares.
struct TriggerInfo {
    Oid oid;
    NameData name;
    Oid fn;
    int16 type;
    char enabled;
    bool internal;
    int nargs;
    char *args[2];
};

// The triggers of a relation, read from pg_trigger (no lock on the relation).
int ReadTriggers(Oid relid, TriggerInfo **out) {
    Relation tgrel = table_open(TriggerRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(relid));
    SysScanDesc scan = systable_beginscan(tgrel, TriggerRelidNameIndexId, true, nullptr, 1, &key);
    int count = 0, capacity = 8;
    auto *infos = static_cast<TriggerInfo *>(palloc0(sizeof(TriggerInfo) * capacity));
    HeapTuple tup;
    while ((tup = systable_getnext(scan)) != nullptr) {
        auto *t = reinterpret_cast<Form_pg_trigger>(GETSTRUCT(tup));
        if (count == capacity) {
            capacity *= 2;
            infos = static_cast<TriggerInfo *>(repalloc(infos, sizeof(TriggerInfo) * capacity));
        }
        TriggerInfo *info = &infos[count++];
        memset(info, 0, sizeof(*info));
        info->oid = t->oid;
        info->name = t->tgname;
        info->fn = t->tgfoid;
        info->type = t->tgtype;
        info->enabled = t->tgenabled;
        info->internal = t->tgisinternal;
        info->nargs = t->tgnargs;
        bool isnull;
        Datum args = heap_getattr(tup, Anum_pg_trigger_tgargs, RelationGetDescr(tgrel), &isnull);
        if (!isnull) {
            bytea *bytes = DatumGetByteaPP(args);
            const char *p = VARDATA_ANY(bytes);
            const char *end = p + VARSIZE_ANY_EXHDR(bytes);
            for (int i = 0; i < info->nargs && i < 2 && p < end; ++i) {
                info->args[i] = pstrdup(p);
                p += strlen(p) + 1;
            }
        }
    }
    systable_endscan(scan);
    table_close(tgrel, AccessShareLock);
    *out = infos;
    return count;
}

bool Enabled(const TriggerInfo &t) {
    return t.enabled == TRIGGER_FIRES_ON_ORIGIN || t.enabled == TRIGGER_FIRES_ALWAYS;
}

// A BEFORE ROW trigger on INSERT or UPDATE can change the token column.
bool ChangesRows(int16 type) {
    return TRIGGER_FOR_ROW(type) && TRIGGER_FOR_BEFORE(type) &&
           (TRIGGER_FOR_INSERT(type) || TRIGGER_FOR_UPDATE(type));
}

// Triggers fire in name order (bytewise): one named after the guard runs after
// the check and could change the token it judged.
bool SortsAfterGuard(const char *name) {
    return strcmp(name, kGuardName) > 0;
}

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

// The relation whose policy fences relid: itself or its nearest protected
// partition ancestor; InvalidOid when none. Inside an internal session.
Oid PolicyHolder(Oid relid, ProtectedRow *row) {
    if (ReadProtectedRow(relid, row))
        return relid;
    if (!get_rel_relispartition(relid))
        return InvalidOid;
    ListCell *lc;
    foreach (lc, get_partition_ancestors(relid)) {
        if (ReadProtectedRow(lfirst_oid(lc), row))
            return lfirst_oid(lc);
    }
    return InvalidOid;
}

// What is wrong with the fencing triggers of one guarded relation.
bool LeafHasPrimaryKey(Oid leaf) {
    Relation rel = table_open(leaf, AccessShareLock);
    PrimaryKey pk;
    bool has = GetPrimaryKey(rel, &pk);
    table_close(rel, AccessShareLock);
    return has;
}

void CheckLeaf(Oid leaf, const ProtectedRow &row, const FencingFunctions &fns, StringInfo out) {
    auto problem = [&](const char *what, const char *name) {
        if (out->len > 0)
            appendStringInfoString(out, "; ");
        appendStringInfo(out, "%s: %s%s%s%s", RelName(leaf), what, name ? " \"" : "",
                         name ? name : "", name ? "\"" : "");
    };
    Policy policy;
    policy.home_relid = row.relid;
    policy.token_attnum = get_attnum(leaf, row.token_column);
    policy.scope = row.scope;
    policy.on_stale = row.on_stale;
    policy.strict = row.strict;
    policy.require_token = row.require_token;
    policy.resource_attnum =
        row.scope == Scope::kResource ? get_attnum(leaf, row.resource_column) : 0;
    if (policy.token_attnum <= 0 || policy.resource_attnum < 0 ||
        (row.scope == Scope::kResource && policy.resource_attnum == 0)) {
        problem("policy column missing", nullptr);
        return;
    }
    char expected[kPolicyTextCapacity];
    EncodePolicy(policy, expected);
    const char *expected_ns = row.scope == Scope::kResource ? row.resource_namespace : "";
    char *guard_name = GuardTriggerName(kGuardName, leaf);

    TriggerInfo *triggers;
    int n = ReadTriggers(leaf, &triggers);
    bool guard = false, recheck = false, move_recheck = false, truncate = false;
    const int16 guard_type = TRIGGER_TYPE_ROW | TRIGGER_TYPE_BEFORE | TRIGGER_TYPE_INSERT |
                             TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE;
    for (int i = 0; i < n; ++i) {
        const TriggerInfo &t = triggers[i];
        const char *name = NameStr(t.name);
        if (t.fn == fns.guard && OidIsValid(t.fn)) {
            guard = true;
            if (!Enabled(t))
                problem("guard disabled", name);
            else if (t.internal)
                problem("internal guard (pg_dump and pg_upgrade drop it)", name);
            else if (strcmp(name, guard_name) != 0 || t.type != guard_type || t.nargs != 2 ||
                     t.args[0] == nullptr || strcmp(t.args[0], expected) != 0 ||
                     t.args[1] == nullptr || strcmp(t.args[1], expected_ns) != 0)
                problem("stale guard", name);
        } else if (t.fn == fns.recheck && OidIsValid(t.fn)) {
            // The AFTER INSERT recheck, or the AFTER UPDATE OF <key> one.
            if (TRIGGER_FOR_UPDATE(t.type))
                move_recheck = true;
            else
                recheck = true;
            if (!Enabled(t) || t.internal)
                problem(t.internal ? "internal recheck trigger" : "recheck trigger disabled", name);
        } else if (t.fn == fns.truncate && OidIsValid(t.fn)) {
            truncate = true;
            if (!Enabled(t))
                problem("truncate trigger disabled", name);
            else if (strcmp(name, TruncateGuardName(row.scope, leaf)) != 0)
                problem("stale truncate trigger", name);
        } else if (Enabled(t) && ChangesRows(t.type) && strcmp(name, guard_name) > 0) {
            problem("trigger runs after the guard and can change the token:", name);
        }
    }
    if (!guard)
        problem("guard missing", nullptr);
    if (row.scope == Scope::kRow && !recheck)
        problem("recheck trigger missing", nullptr);
    if (row.scope == Scope::kRow && !move_recheck && LeafHasPrimaryKey(leaf))
        problem("key-move recheck trigger missing", nullptr);
    if (OidIsValid(fns.truncate) && !truncate)
        problem("truncate trigger missing", nullptr);
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

// Re-installs relid's guards from its policy: rewriting the row fires
// fencing.protected_sync. Inside an internal session.
bool RepairGuards(Oid relid) {
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    return RunInternalSql(
               "UPDATE fencing.protected SET relid = relid"
               " WHERE relid OPERATOR(pg_catalog.=) $1",
               1, types, values, nullptr, false) > 0;
}

[[noreturn]] void RefuseLateTrigger(const char *trigname, Oid relid) {
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("trigger \"%s\" would run after the fencing guard of table %s", trigname,
                           RelName(relid)),
                    errdetail("BEFORE ROW triggers fire in name order; one whose name sorts after "
                              "\"%s\" could change the token after the guard has judged it.",
                              kGuardName),
                    errhint("Choose a name that sorts before \"%s\".", kGuardName)));
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

const TriggerInfo *FindTrigger(TriggerInfo *triggers, int n, const char *name) {
    for (int i = 0; i < n; ++i)
        if (strcmp(NameStr(triggers[i].name), name) == 0)
            return &triggers[i];
    return nullptr;
}

void BeforeCreateTrigger(CreateTrigStmt *stmt, const FencingFunctions &fns) {
    Oid relid = RangeVarGetRelid(stmt->relation, NoLock, true);
    if (!OidIsValid(relid))
        return;
    TriggerInfo *triggers;
    int n = ReadTriggers(relid, &triggers);
    const TriggerInfo *existing = FindTrigger(triggers, n, stmt->trigname);
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
    // A fencing trigger created by a statement (a restored dump, or by hand):
    // the table's policy decides what its guards are.
    InternalSession access;
    BeginInternal(&access);
    ProtectedRow row;
    Oid holder = PolicyHolder(relid, &row);
    if (!OidIsValid(holder)) {
        // No policy (yet: a schema-only restore brings it with the data). The
        // guard would judge with another database's OIDs and attnums: drop it.
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
    Policy dumped;
    if (fn == fns.guard && stmt->args != NIL &&
        DecodePolicy(strVal(linitial(stmt->args)), &dumped) &&
        (dumped.scope != row.scope || dumped.strict != row.strict ||
         dumped.on_stale != row.on_stale || dumped.require_token != row.require_token))
        ereport(WARNING,
                (errmsg("table %s keeps its policy in this database (%s scope), not the one of "
                        "the guard being created (%s scope)",
                        RelName(relid), ScopeName(row.scope), ScopeName(dumped.scope)),
                 errhint("A dump of single tables carries neither fencing's policies nor its "
                         "high-water marks; call fencing_protect() to restore the policy.")));
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
    Oid schema = get_namespace_oid("fencing", true);
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
                TriggerInfo *triggers;
                int n = ReadTriggers(relid, &triggers);
                const TriggerInfo *t = FindTrigger(triggers, n, cmd->name);
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
    TriggerInfo *triggers;
    int n = ReadTriggers(relid, &triggers);
    const TriggerInfo *t = FindTrigger(triggers, n, stmt->subname);
    if (t == nullptr)
        return;
    if (IsFencingFunction(fns, t->fn))
        RefuseGuardDdl("rename", relid);
    if (Enabled(*t) && ChangesRows(t->type) && SortsAfterGuard(stmt->newname) &&
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
        TriggerInfo *triggers;
        int n = ReadTriggers(relid, &triggers);
        const TriggerInfo *t =
            FindTrigger(triggers, n, strVal(llast(castNode(List, stmt->object))));
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

}  // namespace

void RequireNoLateTrigger(Oid leaf) {
    FencingFunctions fns = LookupFencingFunctions();
    TriggerInfo *triggers;
    int n = ReadTriggers(leaf, &triggers);
    for (int i = 0; i < n; ++i) {
        const TriggerInfo &t = triggers[i];
        if (!IsFencingFunction(fns, t.fn) && Enabled(t) && ChangesRows(t.type) &&
            SortsAfterGuard(NameStr(t.name)))
            RefuseLateTrigger(NameStr(t.name), leaf);
    }
}

void InstallTruncateGuard(Oid leaf, const ProtectedRow &row) {
    Oid fn = FencingFunctionOid("truncate_guard");
    if (!OidIsValid(fn))
        return;
    CreateTrigStmt *stmt = makeNode(CreateTrigStmt);
    stmt->trigname = TruncateGuardName(row.scope, leaf);
    stmt->relation =
        makeRangeVar(get_namespace_name(get_rel_namespace(leaf)), get_rel_name(leaf), -1);
    stmt->funcname =
        list_make2(makeString(pstrdup("fencing")), makeString(pstrdup("truncate_guard")));
    stmt->row = false;
    stmt->timing = TRIGGER_TYPE_BEFORE;
    stmt->events = TRIGGER_TYPE_TRUNCATE;
    CreateTrigger(stmt, nullptr, leaf, InvalidOid, InvalidOid, InvalidOid, fn, InvalidOid, nullptr,
                  false, false);
}

}  // namespace fencing::pg

using namespace fencing;
using namespace fencing::pg;

// BEFORE TRUNCATE, statement level, every scope: on a subscriber, refused
// while a subscription replicates the table (as any local write). In row
// scope every row then leaves a tombstone under its primary key, as a DELETE
// of it would; TRUNCATE holds an ACCESS EXCLUSIVE lock, so the rows read are
// all there is. Resource and table HWMs stay as they are: nothing to write.
FENCING_FUNCTION(fencing_truncate_guard) {
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("fencing.truncate_guard() can only be called as a trigger")));
    auto *td = reinterpret_cast<TriggerData *>(fcinfo->context);
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
        return PointerGetDatum(nullptr);
    TombstoneEveryRow(rel, policy.home_relid, policy.token_attnum);
    return PointerGetDatum(nullptr);
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

// fencing_verify_guards(repair): every protected table the caller may read
// whose guards are missing, disabled, internal or stale; with repair, the
// caller's own tables (a superuser's: all) get their guards re-installed.
FENCING_FUNCTION(fencing_verify_guards) {
    bool repair = !PG_ARGISNULL(0) && PG_GETARG_BOOL(0);
    InitMaterializedSRF(fcinfo, 0);
    auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
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
        if (repair && pg_class_ownercheck(relid, GetUserId())) {
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
    return PointerGetDatum(nullptr);
}

// Event trigger (1.1): ddl_command_start on CREATE TRIGGER, ALTER TRIGGER,
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
