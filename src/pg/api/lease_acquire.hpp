// The acquire path of fencing_acquire and fencing_acquire_all
// (pg/api/leases.hpp): the rights check, one attempt at a resource's lease
// row (claim, takeover, raise, write), and the wait in the resource's queue.
#pragma once

#include "core/token.hpp"
#include "pg/base/pg.hpp"

extern "C" {
#include "portability/instr_time.h"
#include "storage/lock.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
}

namespace fencing::pg {

// The lease row's key ($1 namespace, $2 resource) and whether its lease is
// live, in the lease statements.
#define LEASE_KEY "namespace OPERATOR(pg_catalog.=) $1 AND resource OPERATOR(pg_catalog.=) $2"
#define LEASE_LIVE \
    "(released_at IS NULL AND expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())"

// kAcquired: a new token. kReacquired: the holder's own live token, its lease
// extended. kTaken: another holder's live lease, until expires_at. kBusy:
// another transaction holds the row locked. kRetry: a concurrent first
// acquire won the insert.
enum class Attempt { kAcquired, kReacquired, kTaken, kBusy, kRetry };

struct AttemptResult {
    Attempt outcome;
    Token token;             // kAcquired, kReacquired
    TimestampTz expires_at;  // kTaken
    TransactionId locker;    // kBusy: who holds the row, when known
};

inline bool Granted(const AttemptResult &r) {
    return r.outcome == Attempt::kAcquired || r.outcome == Attempt::kReacquired;
}

// fencing_acquire's and fencing_acquire_all's common arguments.
struct LeaseRequest {
    char *name_space;
    char *holder;
    const Interval *ttl;
    bool waits;     // wait => given
    int64 wait_us;  // how long, when waits
};

int64 MicrosSince(instr_time started);

// Ends the subtransaction the caller began: kept or rolled back, then back
// to the caller's memory context and resource owner.
void EndSubTransaction(bool keep, MemoryContext context, ResourceOwner owner);

// Releases a lock LockWithin took (the transaction's resource owner).
void UnlockWithin(const LOCKTAG *tag, LOCKMODE mode);

// The rights fencing_acquire asks for; on_subscriber names what a subscriber
// refuses (nullptr: a read, allowed there).
void RequireAcquireRights(const char *name_space, const char *on_subscriber, const char *action);

// One attempt, in the caller's transaction, with at most wait_us for the
// takeover and the raise.
AttemptResult TryAcquire(const char *name_space, const char *resource, const char *holder,
                         const Interval *ttl, int64 wait_us);

// Takes the resource's wait queue lock, at most wait_us; false when the wait
// ran out first.
bool JoinWaitQueue(const LOCKTAG *tag, int64 wait_us);

// Sleeps until the refused lease may be free or left_us has passed.
void SleepForLease(const AttemptResult &r, int64 left_us);

// The result of fencing_acquire for one resource.
Datum AcquireOne(FunctionCallInfo fcinfo, const LeaseRequest &req, const char *resource);

}  // namespace fencing::pg
