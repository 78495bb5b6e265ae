// The commit of lease changes (pg/api/leases.hpp): the wait queue's lock tag,
// the wake-up of a resource's waiters once a release or renew of it commits,
// and the commit mode of a transaction that changed leases: durable, or,
// when its only writes are releases, without waiting for its WAL flush
// (pg/api/leases.hpp says when).
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "access/xlogdefs.h"
#include "storage/lock.h"
}

namespace fencing::pg {

// The advisory lock tag of the resource's wait queue (pg_locks: advisory,
// objsubid 17477).
void LeaseLockTag(LOCKTAG *tag, const char *name_space, const char *resource);

// A release or renew changed a row. before: XactLastRecEnd when the call
// started; had_xid: whether the transaction had an xid then.
void NoteLeaseChange(bool had_xid, XLogRecPtr before);

// A renewal or a re-acquire extended a lease: the commit is durable.
void NoteLeaseExtended();

// Sets the latch of the resource's head waiter once this transaction
// commits.
void WakeWaitersAtCommit(const char *name_space, const char *resource);

// The transaction callback that wakes a resource's waiters once a release or
// renew of it commits, and lowers the commit of a release-only
// transaction; registered once, from _PG_init.
void RegisterLeaseCallbacks();

}  // namespace fencing::pg
