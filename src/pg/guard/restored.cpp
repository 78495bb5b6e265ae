// The restored-without-state mark of a table's guards (pg/guard/restored.hpp).
#include "pg/guard/restored.hpp"

#include "pg/base/errors.hpp"
#include "pg/base/relation_args.hpp"

extern "C" {
#include "access/xact.h"
#include "utils/memutils.h"
}

namespace fencing::pg {
namespace {

// The marks set or lifted by this transaction, in TopMemoryContext; cleared
// when it ends.
struct MarkChange {
    Oid relid;   // InvalidOid: a dropped table's mark, by name
    char *name;  // the dropped table's qualified name
    char *mark;  // nullptr: lifted
};
List *changes = NIL;

void ForgetChanges(XactEvent event, void *) {
    if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
        event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT &&
        event != XACT_EVENT_PREPARE)
        return;
    ListCell *lc;
    foreach (lc, changes) {
        auto *c = static_cast<MarkChange *>(lfirst(lc));
        if (c->mark != nullptr)
            pfree(c->mark);
        if (c->name != nullptr)
            pfree(c->name);
    }
    list_free_deep(changes);
    changes = NIL;
}

MarkChange *ChangeOf(Oid relid) {
    ListCell *lc;
    foreach (lc, changes) {
        auto *c = static_cast<MarkChange *>(lfirst(lc));
        if (c->relid == relid && c->name == nullptr)
            return c;
    }
    return nullptr;
}

}  // namespace

bool RestoredMarkChanged(Oid relid, const char **mark) {
    const MarkChange *c = ChangeOf(relid);
    if (c == nullptr)
        return false;
    *mark = c->mark;
    return true;
}

void SetRestoredMark(Oid relid, const char *mark) {
    MarkChange *c = ChangeOf(relid);
    if (c == nullptr) {
        c = static_cast<MarkChange *>(MemoryContextAllocZero(TopMemoryContext, sizeof(MarkChange)));
        c->relid = relid;
        MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
        changes = lappend(changes, c);
        MemoryContextSwitchTo(old);
    } else if (c->mark != nullptr) {
        pfree(c->mark);
    }
    c->mark = mark != nullptr ? MemoryContextStrdup(TopMemoryContext, mark) : nullptr;
}

void KeepDroppedMark(const char *qualified_name, const char *mark) {
    auto *c =
        static_cast<MarkChange *>(MemoryContextAllocZero(TopMemoryContext, sizeof(MarkChange)));
    c->name = MemoryContextStrdup(TopMemoryContext, qualified_name);
    c->mark = MemoryContextStrdup(TopMemoryContext, mark);
    MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
    changes = lappend(changes, c);
    MemoryContextSwitchTo(old);
}

const char *DroppedMark(const char *qualified_name) {
    ListCell *lc;
    foreach (lc, changes) {
        auto *c = static_cast<MarkChange *>(lfirst(lc));
        if (c->name != nullptr && strcmp(c->name, qualified_name) == 0)
            return c->mark;
    }
    return nullptr;
}

void RegisterRestoredCallbacks() {
    RegisterXactCallback(ForgetChanges, nullptr);
}

void RefuseRestoredWrite(Relation rel, const char *mark) {
    ereport(
        ERROR,
        (errcode(ERRCODE_FENCING_RESTORED_WITHOUT_STATE),
         errmsg("table %s was restored without its fencing state", RelName(RelationGetRelid(rel))),
         errdetail("%s", mark),
         errhint("Restore fencing's state with the table (a whole-database dump, or pg_dump "
                 "-t tbl -t 'fencing.*'), or accept its loss: SELECT "
                 "fencing_reset_restored('%s') (its owner; logged in fencing.reset_log; a "
                 "database whose extension is older than 1.6 needs ALTER EXTENSION fencing "
                 "UPDATE first).",
                 RelName(RelationGetRelid(rel)))));
    pg_unreachable();
}

}  // namespace fencing::pg
