// Waiting for the transactions still writing an HWM row: a dirty-snapshot
// look at the row's index entries, as the unique check does.
#pragma once

#include "core/token.hpp"
#include "pg/hwm/store_shape.hpp"

extern "C" {
#include "storage/lock.h"
#include "utils/snapshot.h"
}

namespace fencing::pg::hwm {

// The transaction still writing the version a dirty snapshot just showed
// (inserting it, or updating or deleting it), when it is another one;
// InvalidTransactionId otherwise.
TransactionId InFlightWriter(const SnapshotData &dirty);

// The first other transaction still writing (inserting, updating or
// deleting) an entry of index (on rel) that matches keys, seen with a dirty
// snapshot as the unique check sees it; InvalidTransactionId when none. Then,
// with value_attnum set, *found tells whether a committed (or this
// transaction's) row matches and *value is its int8 column value_attnum (the
// highest, and *found_tid where it is).
// With recheck set (a hash index, which returns every row of the key's hash
// value), rows without recheck's key are skipped: neither read nor waited for.
TransactionId IndexWriter(Relation rel, Relation index, ScanKey keys, int nkeys,
                          TupleTableSlot *slot, AttrNumber value_attnum, bool *found, Token *value,
                          ItemPointer found_tid = nullptr, const DirectAccess *recheck = nullptr);

// Waits until the (sub)transaction xid, seen writing an HWM row, has ended or
// been rolled back.
void WaitForWriter(TransactionId xid);

// For an HWM table not of the direct path's shape: waits for every
// transaction writing any of its rows, which is coarser but sure.
void WaitForAllWriters(const DirectTable *t);

// Takes the HWM lock (lock / unlock: one of its modes) at a moment when no
// other transaction is writing a's row. A writer found is waited for without
// the lock, which its transaction may ask for again (a write at the HWM it
// raised); then the lock is taken again and the row looked at again.
void LockWhenNoWriter(DirectAccess *a, const LOCKTAG *tag, void (*lock)(const LOCKTAG *),
                      void (*unlock)(const LOCKTAG *));

}  // namespace fencing::pg::hwm

namespace fencing::pg {

// Takeover (pg/api/takeover.hpp): the resource's committed HWM, read with the
// latest snapshot, and the transaction holding its row locked (a writer
// admitted at that HWM on the row-lock path: strict mode, many resources in
// one transaction, or a raise expected from the backend's last look), when it
// is one and in progress. False when the resource has no HWM row.
bool ResourceHwmLocker(const char *name_space, const char *resource, Token *hwm,
                       TransactionId *locker);

}  // namespace fencing::pg
