// Leases that issue fencing tokens (fencing_acquire, fencing_acquire_all,
// fencing_check, fencing_renew, fencing_release, the fencing_leases view).
//
// fencing.lease holds, per (namespace, resource), the last token ever issued
// and the current or last lease. Acquiring
//   1. locks the resource's lease row only when it can be granted: free, or
//      the holder's own live lease (SELECT ... FOR UPDATE SKIP LOCKED, or the
//      first INSERT ... ON CONFLICT DO NOTHING after a dirty look that no
//      other transaction is writing the row). A live lease of another holder
//      is never locked, and a row another transaction holds locked (an open
//      renew, a prepared transaction) is skipped, never waited for: the
//      attempt is refused, so no acquire waits on a row lock past its wait;
//   2. for the holder's own live lease (re-acquire): extends it and returns
//      its token, nothing issued;
//   3. otherwise picks token = last issued + 1 and raises the resource's HWM
//      in its namespace to it, strictly (pg/hwm/store.hpp): when the HWM is
//      already at or above it, the token becomes HWM + 1 and the raise is
//      tried again, so the token is above both;
//   4. stores the token and the lease, and marks the transaction as one that
//      must commit durably (pg/hwm/durability.hpp).
// No subtransaction per attempt: a refused attempt has locked nothing, so
// thousands of acquires in one statement cost the same per lease.
//
// Waiting (wait => interval): waiters queue on an advisory lock tag hashed
// from (namespace, resource) in ExclusiveLock mode (pg_locks: advisory,
// objsubid 17477), so the lock manager serves them in arrival order; only
// the head holds it and tries. It sleeps on its latch until the lease
// expires or the wait ends, or waits (bounded) for the transaction that holds
// the row locked. A committed release or renew sets the latch of the head
// (GetLockConflicts) right after its commit.
//
// fencing_acquire_all tries every resource in sorted order in one
// subtransaction, kept only when all were granted; otherwise it is rolled
// back and the caller waits in the refusing resource's queue, holding no row
// lock, so overlapping sets in any order cannot deadlock.
//
// A transaction whose only writes are successful releases commits without
// waiting for its WAL flush (synchronous_commit off for that commit): noted
// per call with XactLastRecEnd, refused when the transaction had an xid
// before the call or wrote WAL after it, and never for PREPARE. A renewal and
// a re-acquire that extends the live lease commit durably, as an acquire:
// clients count their safe time from the renewals they saw succeed.
//
// The acquire path is in pg/api/lease_acquire.hpp; waking waiters and the
// commit mode in pg/api/lease_commit.hpp. This header declares nothing: the
// SQL functions are found by name.
#pragma once
