// See durability.hpp. PostgreSQL 15 commit order (xact.c CommitTransaction):
// XACT_EVENT_PRE_COMMIT callbacks, then RecordTransactionCommit (flush if
// synchronous_commit > off or forceSyncCommit; SyncRepWaitForLSN, which waits
// if synchronous_commit > local and SyncRepWaitMode, set by the GUC's assign
// hook, asks for it), then XACT_EVENT_COMMIT callbacks, where the session's
// value is put back, and only after that AtEOXact_GUC. PrepareTransaction has
// the same order around EndPrepare.
#include "pg/hwm/durability.hpp"

#include "pg/base/pg.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/xact.h"
}

namespace fencing::pg {
namespace {

// The outermost nesting level that holds a raise, 0 when none. A raise made in
// a subtransaction passes to the parent when the subtransaction commits and is
// forgotten when it aborts (its writes are rolled back). One integer suffices:
// every surviving raise is at this level or deeper, and when this level aborts
// all of them are rolled back with it.
int raised_level = 0;

// Bumped by every HWM raise of this backend, every subtransaction abort and
// every transaction end: a fact learned under a lock of this transaction
// (HwmStateEpoch) holds while it is unchanged.
uint64 hwm_state_epoch = 1;
// The same without the raises: bumped by subtransaction aborts and
// transaction ends only (LockEpoch).
uint64 lock_epoch = 1;

// The session's synchronous_commit while this transaction's commit runs
// with 'on'; -1 when it is not overridden.
int overridden_synchronous_commit = -1;

// The transaction is about to write its commit (or prepare) record.
void MakeCommitDurable() {
    if (raised_level == 0)
        return;
    ForceSyncCommit();
    // 'on' (remote_flush) is the level at which an acknowledged commit is on
    // disk locally and at the synchronous standbys: what a raise needs to
    // survive a crash or a failover to one of them. remote_apply is stronger
    // still and kept when the session asks for it; it adds read visibility on
    // the standby, not durability, so it is not forced.
    //
    // The variable and its assign hook (which sets the wait mode
    // SyncRepWaitForLSN reads), not SET LOCAL: from here to the COMMIT (or
    // PREPARE, or ABORT) event below no SQL runs and nothing reads the setting
    // through the GUC machinery, and the value is put back there, before
    // AtEOXact_GUC. SET LOCAL cost a GUC stack entry and AtEOXact_GUC's walk
    // over every setting: 5k instructions per raising transaction.
    if (synchronous_commit < SYNCHRONOUS_COMMIT_ON) {
        overridden_synchronous_commit = synchronous_commit;
        synchronous_commit = SYNCHRONOUS_COMMIT_ON;
        assign_synchronous_commit(SYNCHRONOUS_COMMIT_ON, nullptr);
    }
}

// After the commit (prepare) record, or on abort: the session's value again.
void RestoreSynchronousCommit() {
    if (overridden_synchronous_commit < 0)
        return;
    synchronous_commit = overridden_synchronous_commit;
    assign_synchronous_commit(overridden_synchronous_commit, nullptr);
    overridden_synchronous_commit = -1;
}

void OnXactEvent(XactEvent event, void *) {
    switch (event) {
        case XACT_EVENT_PRE_COMMIT:
        case XACT_EVENT_PRE_PREPARE:
            MakeCommitDurable();
            break;
        case XACT_EVENT_PARALLEL_PRE_COMMIT:
            // Parallel workers do not write fenced tables (the guard is
            // parallel unsafe); the leader commits.
            break;
        default:
            // COMMIT, ABORT, PREPARE and their parallel forms: the
            // transaction is over, a new one starts clean.
            RestoreSynchronousCommit();
            raised_level = 0;
            ++hwm_state_epoch;
            ++lock_epoch;
            break;
    }
}

void OnSubXactEvent(SubXactEvent event, SubTransactionId, SubTransactionId, void *) {
    // The locks it took are released.
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        ++hwm_state_epoch;
        ++lock_epoch;
    }
    if (raised_level == 0)
        return;
    // Called while the ending subtransaction is still the current one.
    int level = GetCurrentTransactionNestLevel();
    if (raised_level < level)
        return;
    if (event == SUBXACT_EVENT_COMMIT_SUB)
        raised_level = level - 1;
    else if (event == SUBXACT_EVENT_ABORT_SUB)
        raised_level = 0;
}

}  // namespace

void RegisterDurabilityCallbacks() {
    RegisterXactCallback(OnXactEvent, nullptr);
    RegisterSubXactCallback(OnSubXactEvent, nullptr);
}

uint64 LockEpoch() {
    return lock_epoch;
}

uint64 HwmStateEpoch() {
    return hwm_state_epoch;
}

void NoteHwmRaised() {
    ++hwm_state_epoch;
    int level = GetCurrentTransactionNestLevel();
    if (raised_level == 0 || level < raised_level)
        raised_level = level;
}

void NoteDurableChange() {
    NoteHwmRaised();
}

}  // namespace fencing::pg
