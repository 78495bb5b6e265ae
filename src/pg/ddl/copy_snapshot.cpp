// Keeps the snapshot of a READ COMMITTED transaction's first copy of each
// fenced table (see copy_snapshot.hpp).
#include "pg/ddl/copy_snapshot.hpp"

#include "pg/base/relation_args.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/guard/triggers.hpp"

extern "C" {
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "storage/lockdefs.h"
#include "tcop/dest.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
}

namespace fencing::pg {
namespace {

struct CopySnapshot {
    CopySnapshot *next;
    Oid relid;
    Snapshot snapshot;  // registered on the top transaction's resource owner
};

CopySnapshot *copies = nullptr;  // in TopTransactionContext
ExecutorStart_hook_type previous_executor_start = nullptr;

bool HasGuard(Oid relid) {
    Relation rel = RelationIdGetRelation(relid);
    if (rel == nullptr)
        return false;
    bool guarded = false;
    TriggerDesc *triggers = rel->trigdesc;
    for (int i = 0; triggers != nullptr && i < triggers->numtriggers && !guarded; ++i)
        guarded = IsGuardTrigger(triggers->triggers[i].tgname);
    RelationClose(rel);
    return guarded;
}

// A statement that writes rows somewhere (a table, or a new one: CREATE
// TABLE ... AS) and reads relations it does not write.
bool CopiesRows(const QueryDesc *query) {
    return query->operation == CMD_INSERT || query->operation == CMD_UPDATE ||
           query->operation == CMD_MERGE || query->dest->mydest == DestIntoRel;
}

void Remember(Oid relid, Snapshot snapshot) {
    for (CopySnapshot *c = copies; c != nullptr; c = c->next)
        if (c->relid == relid)
            return;
    if (!HasGuard(relid))
        return;
    MemoryContext caller = MemoryContextSwitchTo(TopTransactionContext);
    auto *entry = static_cast<CopySnapshot *>(palloc(sizeof(CopySnapshot)));
    entry->relid = relid;
    entry->snapshot = RegisterSnapshotOnOwner(snapshot, TopTransactionResourceOwner);
    entry->next = copies;
    copies = entry;
    MemoryContextSwitchTo(caller);
}

void StartQuery(QueryDesc *query, int eflags) {
    if (previous_executor_start != nullptr)
        previous_executor_start(query, eflags);
    else
        standard_ExecutorStart(query, eflags);
    // REPEATABLE READ and SERIALIZABLE compare with the transaction's own
    // snapshot; a query only explained reads nothing.
    if (IsolationUsesXactSnapshot() || (eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0 ||
        !IsTransactionState() || query->snapshot == nullptr || !IsMVCCSnapshot(query->snapshot) ||
        !CopiesRows(query))
        return;
    ListCell *lc;
    foreach (lc, query->plannedstmt->rtable) {
        auto *rte = static_cast<RangeTblEntry *>(lfirst(lc));
        // Read only: a relation the statement writes holds a stronger lock.
        if (rte->rtekind == RTE_RELATION && rte->relkind == RELKIND_RELATION &&
            rte->rellockmode == AccessShareLock)
            Remember(rte->relid, query->snapshot);
    }
}

void OnXactEvent(XactEvent event, void *) {
    // Unregistered before the resource owner would warn of a leak; an abort
    // releases them with its owner.
    if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PARALLEL_PRE_COMMIT ||
        event == XACT_EVENT_PRE_PREPARE)
        for (CopySnapshot *c = copies; c != nullptr; c = c->next)
            UnregisterSnapshotFromOwner(c->snapshot, TopTransactionResourceOwner);
    if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PARALLEL_PRE_COMMIT ||
        event == XACT_EVENT_PRE_PREPARE || event == XACT_EVENT_ABORT ||
        event == XACT_EVENT_PARALLEL_ABORT)
        copies = nullptr;
}

}  // namespace

void RegisterCopySnapshotHooks() {
    previous_executor_start = ExecutorStart_hook;
    ExecutorStart_hook = StartQuery;
    RegisterXactCallback(OnXactEvent, nullptr);
}

Snapshot CopySnapshotOf(Oid relid) {
    for (CopySnapshot *c = copies; c != nullptr; c = c->next)
        if (c->relid == relid)
            return c->snapshot;
    return nullptr;
}

}  // namespace fencing::pg

namespace fencing::pg {

void RequireRowsAsCopied(Oid relid, const char *what) {
    if (copies == nullptr || IsolationUsesXactSnapshot())
        return;
    Snapshot latest = RegisterSnapshot(GetLatestSnapshot());
    ListCell *lc;
    foreach (lc, find_all_inheritors(relid, NoLock, nullptr)) {
        Snapshot copied = CopySnapshotOf(lfirst_oid(lc));
        if (copied == nullptr)
            continue;
        // The copy's snapshot as of now for this transaction's own changes:
        // what it wrote after the copy is not another's write.
        SnapshotData as_of_now = *copied;
        as_of_now.curcid = latest->curcid;
        as_of_now.copied = false;
        as_of_now.regd_count = 0;
        as_of_now.active_count = 0;
        Snapshot then = RegisterSnapshot(&as_of_now);
        Relation rel = table_open(lfirst_oid(lc), NoLock);
        bool differ = RowsDiffer(rel, latest, then) || RowsDiffer(rel, then, latest);
        const char *leaf = RelName(lfirst_oid(lc));
        table_close(rel, NoLock);
        UnregisterSnapshot(then);
        if (differ)
            ereport(ERROR,
                    (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                     errmsg("could not serialize access due to a concurrent fenced write"),
                     errdetail("Table %s was written by another transaction after this "
                               "transaction copied it; %s would lose that acknowledged write.",
                               leaf, what),
                     errhint("Retry the migration with every writer kept out from the copy on "
                             "(LOCK TABLE %s IN SHARE MODE before copying), or run it under "
                             "REPEATABLE READ with that lock as its first statement.",
                             RelName(relid))));
    }
    UnregisterSnapshot(latest);
}

}  // namespace fencing::pg
