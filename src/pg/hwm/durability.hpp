// Durability of HWM raises: a transaction that raised any high-water mark
// commits durably whatever the session sets.
//
// With synchronous_commit = off (or local, remote_write) PostgreSQL
// acknowledges a COMMIT before its WAL is flushed (or before the synchronous
// standby has flushed it). A raise lost that way would let the fenced-off
// writer's token in again after a crash or a failover. So every place that
// really raises an HWM calls NoteHwmRaised(), and at PRE_COMMIT (and
// PRE_PREPARE) such a transaction
//   * forces the local WAL flush (ForceSyncCommit), and
//   * runs its commit with synchronous_commit at least 'on' (remote_flush), for
//     that commit record only, so the commit also waits for the
//     synchronous standbys the server configuration names
//     (synchronous_standby_names). Without synchronous standbys, 'on' waits
//     for nothing more than the local flush.
// Transactions that raised nothing are untouched.
//
// Subtransactions: a raise made in a subtransaction that aborts is rolled back
// and forces nothing; one that commits passes to its parent.
// Two-phase commit: PREPARE TRANSACTION always flushes locally; a raising
// transaction's PREPARE also waits for the synchronous standbys (PostgreSQL
// caps that wait at remote_flush). COMMIT PREPARED always flushes locally too;
// its standby wait follows the synchronous_commit of the session that issues
// it (this module cannot see that it commits a raise). A prepared transaction
// that reached the standby survives a failover and still holds its row locks,
// so the transaction manager finishes it there.
#pragma once

namespace fencing::pg {

// Registers the transaction callbacks; once per backend, from _PG_init.
void RegisterDurabilityCallbacks();

// The current (sub)transaction raised an HWM (row token, tombstone, resource or
// table HWM). Cheap: one call and a comparison. Call it only where the HWM
// really rises, so that same-token writes keep the session's commit mode.
void NoteHwmRaised();

}  // namespace fencing::pg
