// Leases that issue fencing tokens (fencing_acquire, fencing_renew,
// fencing_release, the fencing_leases view).
//
// fencing.lease holds, per (namespace, resource), the last token ever issued
// and the current or last lease. Its rows are never deleted. Acquiring
//   1. locks the resource's lease row (SELECT ... FOR UPDATE, or the first
//      INSERT ... ON CONFLICT DO NOTHING), so concurrent acquires of one
//      resource are serialized and only one of them can find it free;
//   2. picks token = last issued + 1 and raises the resource's HWM in its
//      namespace to it, strictly (pg/hwm/store.hpp): when the HWM is already
//      at or above it (a token from elsewhere was written), the token becomes
//      HWM + 1 and the raise is tried again, so the token is above both;
//   3. stores the token and the lease, and marks the transaction as one that
//      must commit durably (pg/hwm/durability.hpp).
// Each attempt runs in a subtransaction, rolled back when the lease turns out
// to be taken, so no row lock outlives a failed attempt.
//
// Waiting (wait => interval): the waiter holds a share-mode advisory lock on a
// tag hashed from (namespace, resource) (pg_locks: locktype advisory, objsubid
// 17477) and sleeps on its latch until the lease expires or the wait ends,
// whichever is first. A committed release or renew of the resource sets the
// latch of every backend holding that tag (GetLockConflicts), right after its
// commit; a woken waiter tries again at once. A release is therefore noticed
// within a wake-up and one attempt; a hash collision only wakes someone
// needlessly.
#pragma once

#include "pg/base/pg.hpp"

namespace fencing::pg {

// The transaction callback that wakes a resource's waiters once a release or
// renew of it commits; registered once, from _PG_init.
void RegisterLeaseCallbacks();

}  // namespace fencing::pg
