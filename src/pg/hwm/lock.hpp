// The HWM lock: one heavyweight lock per shared high-water mark (a resource of
// a namespace, or a table-scope table), transaction-scoped, queued fairly by
// PostgreSQL's lock manager (a new request that conflicts with a waiting one
// queues behind it).
//
//   writers at the HWM   ShareLock, held to the end of the transaction: they
//                        do not block each other;
//   raises               ExclusiveLock, from before the raise until the
//                        raised HWM row version exists: a raise waits for the
//                        writers admitted before it, and writers arriving
//                        later queue behind it, then see its raise (in flight:
//                        they wait for its transaction; committed: refused).
//
// In pg_locks the lock shows as locktype 'advisory' with objsubid
// kResourceHwmLockField4 (classid, objid: a 64-bit hash of namespace and
// resource), kTableHwmLockField4 (classid: the table's OID, objid 0) or
// kAttachLockField4 (classid: a row-scope home's OID, objid 0).
// User advisory locks use objsubid 1 and 2, lease waiters 0x4445.
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "storage/lock.h"
}

namespace fencing::pg {

constexpr uint16 kResourceHwmLockField4 = 0x4857;     // 'HW'
constexpr uint16 kTableHwmLockField4 = 0x4854;        // 'HT'
constexpr uint16 kAttachLockField4 = 0x4841;          // 'HA'
constexpr uint16 kTombstoneFloorLockField4 = 0x4846;  // 'HF'

// identity: "<namespace>\0<resource>", identity_len bytes.
void ResourceHwmLockTag(LOCKTAG *tag, const char *identity, Size identity_len);
void TableHwmLockTag(LOCKTAG *tag, Oid relid);

// Orders fencing_advance of a row-scope home's keys against an ATTACH
// PARTITION that judges the rows it brings against the home's tombstones:
// the advance holds it in ShareLock, the ATTACH in ExclusiveLock, each to the
// end of its transaction. Else an advance committing between the ATTACH's
// judgement and its commit would write a tombstone above a row being
// attached (the row is not yet in the home, so the advance cannot raise it).
void LockAttachShared(Oid home_relid);
void LockAttachExclusive(Oid home_relid);
// Without waiting: false when another transaction holds it. The unlock gives
// back one acquisition of this transaction's (it stays held if taken before).
bool ConditionalLockAttachExclusive(Oid home_relid);
void UnlockAttachExclusive(Oid home_relid);

// Orders a row-scope home's floor readers against its retirement: a reader
// that keeps the floor it read for the rest of its transaction (floors.cpp:
// one that reads it more than once) holds it in ShareLock to the end of the transaction, taken without waiting
// (not granted: it reads the floor for each row instead, as before); a
// retirement of the table's tombstones takes it in ExclusiveLock before it
// deletes any. So no retirement commits while a reader keeps a floor, and a
// retirement waiting for one makes no writer wait: new readers just do not
// keep the floor meanwhile.
bool ConditionalLockTombstoneFloorShared(Oid home_relid);
// nowait: false at once when not granted.
bool LockTombstoneFloorExclusive(Oid home_relid, bool nowait);

// Whether this transaction may take another HWM ShareLock: past half of
// max_locks_per_transaction, writers at the HWM lock the HWM row instead (as
// raises also do), so a transaction writing many resources cannot exhaust the
// shared lock table.
bool MayTakeHwmShareLock();
// ShareLock; counted for MayTakeHwmShareLock when newly acquired.
void LockHwmShared(const LOCKTAG *tag);
void UnlockHwmShared(const LOCKTAG *tag);
// ExclusiveLock, for one raise: released once the raised row version exists.
void LockHwmExclusive(const LOCKTAG *tag);
void UnlockHwmExclusive(const LOCKTAG *tag);

}  // namespace fencing::pg
