// The commit of lease changes: the wake-up of waiters once a release or
// renew commits, and the cheap commit of release-only transactions; see
// pg/api/lease_commit.hpp.
#include "pg/api/lease_commit.hpp"

#include "pg/hwm/durability.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/memutils.h"
}

namespace fencing::pg {
namespace {

// objsubid of the advisory lock tags of lease wait queues ('DE'); user
// advisory locks use 1 and 2.
constexpr uint16 kLeaseLockField4 = 0x4445;

// Lease changes of this transaction whose waiters must be woken at commit.
List *pending_wakeups = NIL;  // of LOCKTAG *, in TopTransactionContext

// The commit of a transaction whose only writes are releases and renews of
// leases need not wait for its WAL flush (pg/api/leases.hpp).
enum class LeaseCommit { kNone, kCheap, kDurable };
LeaseCommit lease_commit = LeaseCommit::kNone;
XLogRecPtr lease_commit_end = InvalidXLogRecPtr;  // XactLastRecEnd after the last change
int lowered_synchronous_commit = -1;              // the session's value while lowered

void LowerCommitIfOnlyLeases() {
    if (lease_commit != LeaseCommit::kCheap || XactLastRecEnd != lease_commit_end ||
        synchronous_commit == SYNCHRONOUS_COMMIT_OFF)
        return;
    lowered_synchronous_commit = synchronous_commit;
    synchronous_commit = SYNCHRONOUS_COMMIT_OFF;
    assign_synchronous_commit(SYNCHRONOUS_COMMIT_OFF, nullptr);
}

void EndLeaseCommit() {
    if (lowered_synchronous_commit >= 0) {
        synchronous_commit = lowered_synchronous_commit;
        assign_synchronous_commit(lowered_synchronous_commit, nullptr);
        lowered_synchronous_commit = -1;
    }
    lease_commit = LeaseCommit::kNone;
    lease_commit_end = InvalidXLogRecPtr;
}

void WakePendingWaiters() {
    ListCell *lc;
    foreach (lc, pending_wakeups) {
        int count = 0;
        VirtualTransactionId *vxids =
            GetLockConflicts(static_cast<LOCKTAG *>(lfirst(lc)), ExclusiveLock, &count);
        for (int i = 0; i < count; ++i) {
            PGPROC *proc = ProcOfVirtualTransaction(vxids[i]);
            if (proc != nullptr)
                SetLatch(&proc->procLatch);
        }
    }
}

void OnLeaseXactEvent(XactEvent event, void *) {
    switch (event) {
        case XACT_EVENT_PRE_COMMIT:
            // Not at PRE_PREPARE: a prepared transaction keeps its mode.
            LowerCommitIfOnlyLeases();
            return;
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_PARALLEL_COMMIT:
            WakePendingWaiters();
            break;
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PARALLEL_ABORT:
        case XACT_EVENT_PREPARE:
            break;
        default:
            return;
    }
    pending_wakeups = NIL;
    EndLeaseCommit();
}

}  // namespace

void LeaseLockTag(LOCKTAG *tag, const char *name_space, const char *resource) {
    StringInfoData buf;
    initStringInfo(&buf);
    appendBinaryStringInfo(&buf, name_space, static_cast<int>(strlen(name_space)) + 1);
    appendStringInfoString(&buf, resource);
    uint64 h = DatumGetUInt64(
        hash_any_extended(reinterpret_cast<const unsigned char *>(buf.data), buf.len, 0));
    SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, static_cast<uint32>(h >> 32), static_cast<uint32>(h),
                         kLeaseLockField4);
}

// A release or renew changed a row. before: XactLastRecEnd when the call
// started; had_xid: whether the transaction had an xid then. It stays cheap
// only while nothing but these changes wrote WAL.
void NoteLeaseChange(bool had_xid, XLogRecPtr before) {
    bool only_leases =
        !had_xid || (lease_commit == LeaseCommit::kCheap && before == lease_commit_end);
    if (!only_leases || lease_commit == LeaseCommit::kDurable) {
        lease_commit = LeaseCommit::kDurable;
        return;
    }
    lease_commit = LeaseCommit::kCheap;
    lease_commit_end = XactLastRecEnd;
}

// A renewal or a re-acquire extended a lease. Clients count a lease's safe
// time from the send time of the last renewal they saw succeed and signal it
// lost before the expiry that renewal wrote; a renewal lost in a crash or a
// failover would bring back an earlier expiry, and another holder could take
// the lease while the client still counts it live. So the commit is durable,
// as an acquire's, and nothing in the transaction lowers it.
void NoteLeaseExtended() {
    lease_commit = LeaseCommit::kDurable;
    NoteDurableChange();
}

void WakeWaitersAtCommit(const char *name_space, const char *resource) {
    MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
    auto *tag = static_cast<LOCKTAG *>(palloc(sizeof(LOCKTAG)));
    LeaseLockTag(tag, name_space, resource);
    pending_wakeups = lappend(pending_wakeups, tag);
    MemoryContextSwitchTo(old);
}

void RegisterLeaseCallbacks() {
    RegisterXactCallback(OnLeaseXactEvent, nullptr);
}

}  // namespace fencing::pg
