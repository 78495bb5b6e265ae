// Keeps the snapshot of a READ COMMITTED transaction's first read of each
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
#include "storage/lmgr.h"
#include "storage/lockdefs.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

namespace fencing::pg {
namespace {

struct ReadSnapshot {
    ReadSnapshot *next;
    Oid relid;
    int nest_level;     // the subtransaction whose abort takes it back
    Snapshot snapshot;  // registered on the top transaction's resource owner
};

ReadSnapshot *reads = nullptr;  // newest first, in TopTransactionContext
// The library was loaded after this transaction's first statement: what
// the statements before read is unknown.
bool loaded_mid_transaction = false;
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

void Remember(Oid relid, Snapshot snapshot) {
    for (ReadSnapshot *r = reads; r != nullptr; r = r->next)
        if (r->relid == relid)
            return;
    if (!HasGuard(relid))
        return;
    MemoryContext caller = MemoryContextSwitchTo(TopTransactionContext);
    auto *entry = static_cast<ReadSnapshot *>(palloc(sizeof(ReadSnapshot)));
    entry->relid = relid;
    entry->nest_level = GetCurrentTransactionNestLevel();
    entry->snapshot = RegisterSnapshotOnOwner(snapshot, TopTransactionResourceOwner);
    entry->next = reads;
    reads = entry;
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
        !IsTransactionState() || query->snapshot == nullptr || !IsMVCCSnapshot(query->snapshot))
        return;
    ListCell *lc;
    foreach (lc, query->plannedstmt->rtable) {
        auto *rte = static_cast<RangeTblEntry *>(lfirst(lc));
        // Read (FOR UPDATE/SHARE included); a relation the statement writes
        // holds a stronger lock.
        if (rte->rtekind == RTE_RELATION && rte->relkind == RELKIND_RELATION &&
            (rte->rellockmode == AccessShareLock || rte->rellockmode == RowShareLock))
            Remember(rte->relid, query->snapshot);
    }
}

void Forget(ReadSnapshot *entry) {
    UnregisterSnapshotFromOwner(entry->snapshot, TopTransactionResourceOwner);
}

void OnXactEvent(XactEvent event, void *) {
    // Unregistered before the resource owner would warn of a leak; an abort
    // releases them with its owner.
    bool ending = event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PARALLEL_PRE_COMMIT ||
                  event == XACT_EVENT_PRE_PREPARE;
    if (ending)
        for (ReadSnapshot *r = reads; r != nullptr; r = r->next) Forget(r);
    if (ending || event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT) {
        reads = nullptr;
        loaded_mid_transaction = false;
    }
}

void OnSubXactEvent(SubXactEvent event, SubTransactionId, SubTransactionId, void *) {
    int level = GetCurrentTransactionNestLevel();
    if (event == SUBXACT_EVENT_COMMIT_SUB) {
        for (ReadSnapshot *r = reads; r != nullptr; r = r->next)
            if (r->nest_level >= level)
                r->nest_level = level - 1;
    } else if (event == SUBXACT_EVENT_ABORT_SUB) {
        // What a rolled-back savepoint read was not carried anywhere.
        while (reads != nullptr && reads->nest_level >= level) {
            Forget(reads);
            reads = reads->next;
        }
    }
}

// The snapshot a leaf is judged by: its own first read, or, for a leaf not
// read (attached since), the first read of any leaf of the tree.
Snapshot SnapshotFor(Oid leaf, const List *tree) {
    Snapshot oldest = nullptr;
    for (ReadSnapshot *r = reads; r != nullptr; r = r->next) {
        if (r->relid == leaf)
            return r->snapshot;
        if (list_member_oid(tree, r->relid))
            oldest = r->snapshot;  // newest first: the last match is the oldest
    }
    return oldest;
}

// Whether a leaf of tree without a recorded read is read-locked by this
// transaction: a statement before the library was loaded read it (relation
// locks are held to the end of the transaction, and every read since the
// load is recorded).
bool ReadBeforeLoad(const List *tree) {
    ListCell *lc;
    foreach (lc, tree) {
        bool recorded = false;
        for (ReadSnapshot *r = reads; r != nullptr && !recorded; r = r->next)
            recorded = r->relid == lfirst_oid(lc);
        if (recorded)
            continue;
        Relation rel = table_open(lfirst_oid(lc), NoLock);
        bool read = CheckRelationLockedByMe(rel, AccessShareLock, false) ||
                    CheckRelationLockedByMe(rel, RowShareLock, false);
        table_close(rel, NoLock);
        if (read)
            return true;
    }
    return false;
}

}  // namespace

void RegisterCopySnapshotHooks() {
    previous_executor_start = ExecutorStart_hook;
    ExecutorStart_hook = StartQuery;
    RegisterXactCallback(OnXactEvent, nullptr);
    RegisterSubXactCallback(OnSubXactEvent, nullptr);
    loaded_mid_transaction =
        IsTransactionState() &&
        GetCurrentTransactionStartTimestamp() != GetCurrentStatementStartTimestamp();
}

bool RowsChangedSinceRead(Oid relid, const char **why) {
    if (IsolationUsesXactSnapshot())
        return false;
    List *tree = find_all_inheritors(relid, NoLock, nullptr);
    if (loaded_mid_transaction && ReadBeforeLoad(tree)) {
        *why = "The fencing library was loaded in the middle of this transaction, after a "
               "statement of it read the table (a copy) unrecorded.";
        return true;
    }
    if (reads == nullptr)
        return false;
    Snapshot latest = RegisterSnapshot(GetLatestSnapshot());
    bool differ = false;
    ListCell *lc;
    foreach (lc, tree) {
        Snapshot read = SnapshotFor(lfirst_oid(lc), tree);
        if (differ || read == nullptr || get_rel_relkind(lfirst_oid(lc)) != RELKIND_RELATION)
            continue;
        // The read's snapshot as of now for this transaction's own changes:
        // what it wrote since is not another's write.
        SnapshotData as_of_now = *read;
        as_of_now.curcid = latest->curcid;
        as_of_now.copied = false;
        as_of_now.regd_count = 0;
        as_of_now.active_count = 0;
        Snapshot then = RegisterSnapshot(&as_of_now);
        Relation rel = table_open(lfirst_oid(lc), NoLock);
        differ = RowsDiffer(rel, latest, then) || RowsDiffer(rel, then, latest);
        if (differ)
            *why = psprintf("Table %s was written by another transaction after this transaction "
                            "read it (a copy made then lacks that acknowledged write).",
                            RelName(lfirst_oid(lc)));
        table_close(rel, NoLock);
        UnregisterSnapshot(then);
    }
    UnregisterSnapshot(latest);
    return differ;
}

void RefuseChangedSinceRead(const char *table, const char *what, const char *why) {
    ereport(ERROR,
            (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
             errmsg("could not serialize access due to a concurrent fenced write"),
             errdetail("%s Carried on by %s, it would be lost.", why, what),
             errhint("Retry the migration with every writer kept out from the copy on (LOCK "
                     "TABLE %s IN SHARE MODE as its first statement), or run it under REPEATABLE "
                     "READ with that lock first; load the library before it "
                     "(shared_preload_libraries) if it was not.",
                     table)));
}

void RequireRowsAsRead(Oid relid, const char *what) {
    const char *why = nullptr;
    if (RowsChangedSinceRead(relid, &why))
        RefuseChangedSinceRead(RelName(relid), what, why);
}

}  // namespace fencing::pg
