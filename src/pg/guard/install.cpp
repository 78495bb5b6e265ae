#include "pg/guard/install.hpp"

#include "pg/base/compat.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/guard/move_recheck.hpp"
#include "pg/guard/restored.hpp"
#include "pg/guard/triggers.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/keys/tombstone_key.hpp"

extern "C" {
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace fencing::pg {

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

// Only fencing.guard's triggers: any table owner can name a trigger of
// their own like a guard and give it a policy's arguments (naming a home
// that does not exist, or another token column).
bool GuardPolicy(Oid leaf, Policy *policy) {
    Oid guard = LookupFencingFunctions().guard;
    Relation rel = table_open(leaf, AccessShareLock);
    bool found = false;
    TriggerDesc *desc = rel->trigdesc;
    for (int i = 0; desc != nullptr && i < desc->numtriggers && !found; ++i) {
        Trigger *t = &desc->triggers[i];
        if (IsGuardTrigger(t->tgname) && t->tgfoid == guard && t->tgnargs >= 1)
            found = DecodePolicy(t->tgargs[0], policy);
    }
    table_close(rel, AccessShareLock);
    return found;
}

bool GuardPolicyUnlocked(Oid leaf, Policy *policy) {
    Oid guard = LookupFencingFunctions().guard;
    TriggerInfo *triggers;
    int n = ReadTriggers(leaf, &triggers);
    for (int i = 0; i < n; ++i)
        if (IsGuardTrigger(NameStr(triggers[i].name)) && triggers[i].fn == guard &&
            triggers[i].nargs >= 1 && triggers[i].args[0] != nullptr &&
            DecodePolicy(triggers[i].args[0], policy))
            return true;
    return false;
}

Policy LeafPolicy(const ProtectedRow &row, int token_attnum, int resource_attnum) {
    Policy policy;
    policy.home_relid = row.relid;
    policy.token_attnum = token_attnum;
    policy.scope = row.scope;
    policy.on_stale = row.on_stale;
    policy.strict = row.strict;
    policy.require_token = row.require_token;
    policy.resource_attnum = row.scope == Scope::kResource ? resource_attnum : 0;
    return policy;
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

namespace {

Oid FencingFunction(const char *name) {
    return LookupFuncName(list_make2(makeString(pstrdup("fencing")), makeString(pstrdup(name))), 0,
                          nullptr, false);
}

void RemoveGuard(Oid relid) {
    Relation rel = table_open(relid, ShareRowExclusiveLock);
    List *guards = NIL;
    TriggerDesc *desc = rel->trigdesc;
    for (int i = 0; desc != nullptr && i < desc->numtriggers; ++i)
        if (IsFencingTriggerName(desc->triggers[i].tgname))
            guards = lappend_oid(guards, desc->triggers[i].tgoid);
    table_close(rel, NoLock);
    ListCell *lc;
    foreach (lc, guards) {
        ObjectAddress addr;
        ObjectAddressSet(addr, TriggerRelationId, lfirst_oid(lc));
        performDeletion(&addr, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
    }
}

// The BEFORE TRUNCATE trigger, named for the scope. A no-op when the
// installed extension script has no fencing.truncate_guard().
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

void InstallGuard(Oid leaf, const ProtectedRow &row, const char *restored_mark) {
    RequireNoLateTrigger(leaf);
    // Every path that fences a table in row scope comes here (protect,
    // auto-protection, partitions, restore, DDL on a protected table).
    if (row.scope == Scope::kRow)
        RequireCanonicalRowKeyOf(leaf);
    int token_attnum = RequireColumn(leaf, row.token_column, "token");
    int resource_attnum =
        row.scope == Scope::kResource ? RequireColumn(leaf, row.resource_column, "resource") : 0;
    Policy policy = LeafPolicy(row, token_attnum, resource_attnum);
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
    if (restored_mark != nullptr)
        stmt->args = lappend(stmt->args, makeString(pstrdup(restored_mark)));
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
        // Row scope: the AFTER INSERT tombstone recheck (fencing.recheck()).
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

}  // namespace

void RefuseForeignPartition(Oid relid) {
    ereport(ERROR,
            (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
             errmsg("foreign table %s cannot be a partition of a fenced table", RelName(relid)),
             errdetail("Writes routed to a foreign table fire no trigger on this server: they "
                       "could not be fenced."),
             errhint("Fence the remote table on its own server.")));
}

namespace {

void SyncGuardsOf(Oid relid, bool touched_only) {
    if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
        return;
    ProtectedRow row;
    bool is_protected = ReadProtectedRow(relid, &row);
    if (is_protected && get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE) {
        ListCell *part;
        foreach (part, find_all_inheritors(relid, NoLock, nullptr)) {
            Oid sub = lfirst_oid(part);
            if (get_rel_relkind(sub) == RELKIND_FOREIGN_TABLE)
                RefuseForeignPartition(sub);
            // A partitioned table attached with a policy of its own gives it
            // up too (its state was carried over: CarryState). Kept, it would
            // be the home of its leaves' guards again after DDL on it, and
            // they would judge by its state rather than relid's. Deleting
            // its row removes the guards of all its leaves: all re-installed.
            ProtectedRow own;
            if (sub != relid && get_rel_relkind(sub) == RELKIND_PARTITIONED_TABLE &&
                ReadProtectedRow(sub, &own)) {
                ereport(NOTICE, (errmsg("partition %s is now fenced by the policy of %s",
                                        RelName(sub), RelName(relid))));
                DeleteProtectedRow(sub);
                touched_only = false;
            }
        }
    }
    // Read before the guards that carry it are removed.
    // The mark this transaction set or lifted, else the one the guards carry.
    const char *restored_mark = nullptr;
    if (is_protected && !RestoredMarkChanged(relid, &restored_mark))
        restored_mark = RestoredMark(relid);
    ListCell *lc;
    foreach (lc, GuardedRelations(relid, touched_only ? NoLock : ShareRowExclusiveLock)) {
        Oid leaf = lfirst_oid(lc);
        if (touched_only && leaf != relid && !RelationLockedByMe(leaf))
            continue;
        // A table attached as a partition gives up its own policy for its parent's.
        ProtectedRow own;
        if (leaf != relid && is_protected && ReadProtectedRow(leaf, &own)) {
            ereport(NOTICE, (errmsg("partition %s is now fenced by the policy of %s", RelName(leaf),
                                    RelName(relid))));
            DeleteProtectedRow(leaf);
        }
        RemoveGuard(leaf);
        if (is_protected)
            InstallGuard(leaf, row, restored_mark);
    }
    // Cached fenced-DML plans of a partitioned table depend on its leaves' guards.
    CacheInvalidateRelcacheByRelid(relid);
    CommandCounterIncrement();
}

}  // namespace

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

const char *RestoredMark(Oid relid) {
    FencingFunctions fns = LookupFencingFunctions();
    ListCell *lc;
    foreach (lc, GuardedRelations(relid, NoLock)) {
        TriggerInfo *triggers;
        int n = ReadTriggers(lfirst_oid(lc), &triggers);
        for (int i = 0; i < n; ++i)
            if (triggers[i].fn == fns.guard && OidIsValid(fns.guard) && triggers[i].nargs >= 3 &&
                triggers[i].args[2] != nullptr)
                return triggers[i].args[2];
    }
    return nullptr;
}

bool RepairGuards(Oid relid) {
    LockPolicyTree(relid);
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    return RunInternalSql(
               "UPDATE fencing.protected SET relid = relid"
               " WHERE relid OPERATOR(pg_catalog.=) $1",
               1, types, values, nullptr, false) > 0;
}

void SyncGuards(Oid relid) {
    SyncGuardsOf(relid, false);
}

void SyncTouchedGuards(Oid relid) {
    SyncGuardsOf(relid, true);
}

}  // namespace fencing::pg
