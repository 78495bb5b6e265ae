// See hwm_lock.hpp.
#include "pg/hwm/lock.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/proc.h"
}

namespace fencing::pg {
namespace {

// HWM ShareLocks this transaction acquired (not counting re-acquisitions of
// one it holds). Reset when the local transaction id changes.
LocalTransactionId counted_lxid = InvalidLocalTransactionId;
int shares_taken = 0;

}  // namespace

void ResourceHwmLockTag(LOCKTAG *tag, const char *identity, Size identity_len) {
    uint64 h = hash_bytes_extended(reinterpret_cast<const unsigned char *>(identity),
                                   static_cast<int>(identity_len), 0);
    SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, static_cast<uint32>(h >> 32), static_cast<uint32>(h),
                         kResourceHwmLockField4);
}

void TableHwmLockTag(LOCKTAG *tag, Oid relid) {
    SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, relid, 0, kTableHwmLockField4);
}

namespace {

void LockAttach(Oid home_relid, LOCKMODE mode) {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, home_relid, 0, kAttachLockField4);
    (void)LockAcquire(&tag, mode, false, false);
}

}  // namespace

void LockAttachShared(Oid home_relid) {
    LockAttach(home_relid, ShareLock);
}

void LockAttachExclusive(Oid home_relid) {
    LockAttach(home_relid, ExclusiveLock);
}

bool ConditionalLockAttachExclusive(Oid home_relid) {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, home_relid, 0, kAttachLockField4);
    return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

void UnlockAttachExclusive(Oid home_relid) {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, home_relid, 0, kAttachLockField4);
    (void)LockRelease(&tag, ExclusiveLock, false);
}

bool ConditionalLockTombstoneFloorShared(Oid home_relid) {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, home_relid, 0, kTombstoneFloorLockField4);
    return LockAcquire(&tag, ShareLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

bool LockTombstoneFloorExclusive(Oid home_relid, bool nowait) {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, home_relid, 0, kTombstoneFloorLockField4);
    return LockAcquire(&tag, ExclusiveLock, false, nowait) != LOCKACQUIRE_NOT_AVAIL;
}

bool MayTakeHwmShareLock() {
    if (counted_lxid != CurrentLocalTransactionId())
        return true;
    return shares_taken < Max(max_locks_per_xact / 2, 1);
}

void LockHwmShared(const LOCKTAG *tag) {
    if (LockAcquire(tag, ShareLock, false, false) != LOCKACQUIRE_OK)
        return;  // held already
    if (counted_lxid != CurrentLocalTransactionId()) {
        counted_lxid = CurrentLocalTransactionId();
        shares_taken = 0;
    }
    ++shares_taken;
}

void UnlockHwmShared(const LOCKTAG *tag) {
    LockRelease(tag, ShareLock, false);
}

void LockHwmExclusive(const LOCKTAG *tag) {
    (void)LockAcquire(tag, ExclusiveLock, false, false);
}

void UnlockHwmExclusive(const LOCKTAG *tag) {
    LockRelease(tag, ExclusiveLock, false);
}

}  // namespace fencing::pg
