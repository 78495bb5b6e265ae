// Durability of HWM raises: a transaction that raised any high-water mark
// commits durably whatever the session sets. A raise lost to an early
// acknowledgement (synchronous_commit off, local or remote_write) would let
// the fenced-off writer's token in again after a crash or a failover.
//
// At PRE_COMMIT and PRE_PREPARE a transaction that called NoteHwmRaised()
// forces the local WAL flush and writes its commit (prepare) record with
// synchronous_commit at least 'on', so it also waits for the synchronous
// standbys; a raise in a subtransaction that aborted forces nothing. COMMIT
// PREPARED flushes locally; its standby wait follows the session that issues
// it (this module cannot see that it commits a raise), which is enough: a
// prepared transaction on the standby survives a failover with its row locks.
#pragma once

#include "pg/base/pg.hpp"

namespace fencing::pg {

// Registers the transaction callbacks; once per backend, from _PG_init.
void RegisterDurabilityCallbacks();

// The current (sub)transaction raised an HWM (row token, tombstone, resource or
// table HWM). Cheap: one call and a comparison. Call it only where the HWM
// really rises, so that same-token writes keep the session's commit mode.
void NoteHwmRaised();

// Changes with every raise this backend makes (NoteHwmRaised), every
// subtransaction abort (which releases the locks it took) and every
// transaction end. A verdict reached under an HWM lock this transaction holds
// may be reused while it is unchanged (pg/hwm/direct_raise.cpp).
uint64 HwmStateEpoch();
// Changes with every subtransaction abort and transaction end only: a lock
// this transaction took is still held while it is unchanged.
uint64 LockEpoch();

// The current (sub)transaction made a change that raised no HWM but must
// survive a crash or a failover once acknowledged (a lease's extension, which
// clients time their lost signal by): the same durable commit as a raise.
void NoteDurableChange();

}  // namespace fencing::pg
