#include "pg/hwm/writers.hpp"

#include "pg/hwm/store.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/subtrans.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
}

namespace fencing::pg {
namespace hwm {

TransactionId InFlightWriter(const SnapshotData &dirty) {
    TransactionId xid = TransactionIdIsValid(dirty.xmin) ? dirty.xmin : dirty.xmax;
    return TransactionIdIsValid(xid) && !TransactionIdIsCurrentTransactionId(xid)
               ? xid
               : InvalidTransactionId;
}

TransactionId IndexWriter(Relation rel, Relation index, ScanKey keys, int nkeys,
                          TupleTableSlot *slot, AttrNumber value_attnum, bool *found, Token *value,
                          ItemPointer found_tid, const DirectAccess *recheck) {
    SnapshotData dirty;
    InitDirtySnapshot(dirty);
    IndexScanDesc scan = BeginIndexScan(rel, index, &dirty, nkeys, 0);
    index_rescan(scan, keys, nkeys, nullptr, 0);
    TransactionId writer = InvalidTransactionId;
    if (value_attnum != 0)
        *found = false;
    while (index_getnext_slot(scan, ForwardScanDirection, slot)) {
        if (recheck != nullptr && !RowHasKey(recheck, slot))
            continue;
        writer = InFlightWriter(dirty);
        if (TransactionIdIsValid(writer))
            break;
        if (value_attnum != 0) {
            bool isnull;
            Token v = DatumGetInt64(slot_getattr(slot, value_attnum, &isnull));
            if (!*found || v > *value) {
                *value = v;
                if (found_tid != nullptr)
                    *found_tid = slot->tts_tid;
            }
            *found = true;
        }
    }
    index_endscan(scan);
    return writer;
}

// XactLockTableWait waits for the topmost transaction as soon as xid has
// committed into its parent (a PL/pgSQL exception block, a released
// savepoint): a writer would then wait for the whole transaction even after
// the savepoint that holds the raise was rolled back. This climbs one level at
// a time instead, each subtransaction's lock being held until it ends.
void WaitForWriter(TransactionId xid) {
    TransactionId level = xid;
    for (;;) {
        LOCKTAG tag;
        SET_LOCKTAG_TRANSACTION(tag, level);
        (void)LockAcquire(&tag, ShareLock, false, false);
        LockRelease(&tag, ShareLock, false);
        if (!TransactionIdIsInProgress(xid))
            return;
        TransactionId parent = SubTransGetParent(level);
        if (TransactionIdIsValid(parent))
            level = parent;  // level committed into its parent, still running
        else
            pg_usleep(1000L);  // a top-level xid seen before it locked itself
        CHECK_FOR_INTERRUPTS();
    }
}

void WaitForAllWriters(const DirectTable *t) {
    Oid relid = StoreRelid(t->name);
    if (OidIsValid(relid)) {
        LockRelationOid(relid, ShareLock);
        UnlockRelationOid(relid, ShareLock);
    }
}

void LockWhenNoWriter(DirectAccess *a, const LOCKTAG *tag, void (*lock)(const LOCKTAG *),
                      void (*unlock)(const LOCKTAG *)) {
    OpenIndex(a);
    TupleTableSlot *slot = table_slot_create(a->rel, nullptr);
    for (;;) {
        lock(tag);
        TransactionId writer =
            IndexWriter(a->rel, a->index, a->keys, a->scan_nkeys, slot, 0, nullptr, nullptr);
        if (!TransactionIdIsValid(writer))
            break;
        unlock(tag);
        WaitForWriter(writer);
    }
    ExecDropSingleTupleTableSlot(slot);
}

}  // namespace hwm

bool ResourceHwmLocker(const char *name_space, const char *resource, Token *hwm,
                       TransactionId *locker) {
    Datum key[] = {CStringGetTextDatum(name_space), CStringGetTextDatum(resource)};
    *locker = InvalidTransactionId;
    *hwm = 0;
    hwm::DirectAccess a;
    if (!hwm::OpenDirectHeap(&hwm::resource_direct, AccessShareLock, key, &a))
        return false;
    hwm::OpenIndex(&a);
    TupleTableSlot *slot = table_slot_create(a.rel, nullptr);
    // A scan's snapshot must be registered (assert-enabled servers check).
    Snapshot latest = RegisterSnapshot(GetLatestSnapshot());
    IndexScanDesc scan = BeginIndexScan(a.rel, a.index, latest, a.scan_nkeys, 0);
    index_rescan(scan, a.keys, a.scan_nkeys, nullptr, 0);
    bool found = index_getnext_slot(scan, ForwardScanDirection, slot);
    if (found) {
        bool isnull;
        *hwm = DatumGetInt64(slot_getattr(slot, a.hwm_attnum, &isnull));
        bool should_free;
        HeapTuple tuple = ExecFetchSlotHeapTuple(slot, false, &should_free);
        uint16 mask = tuple->t_data->t_infomask;
        TransactionId xmax = HeapTupleHeaderGetRawXmax(tuple->t_data);
        // A lock only (an update would be a newer version, not this one's);
        // several lockers (a multixact) are not told apart.
        if ((mask & HEAP_XMAX_INVALID) == 0 && HEAP_XMAX_IS_LOCKED_ONLY(mask) &&
            (mask & HEAP_XMAX_IS_MULTI) == 0 && !TransactionIdIsCurrentTransactionId(xmax) &&
            TransactionIdIsInProgress(xmax))
            *locker = xmax;
        if (should_free)
            heap_freetuple(tuple);
    }
    index_endscan(scan);
    UnregisterSnapshot(latest);
    ExecDropSingleTupleTableSlot(slot);
    hwm::CloseDirect(&a);
    return found;
}

void WaitForIndexWriters(Relation rel, Relation index, ScanKey keys, int nkeys) {
    // Wait for each writer, then look again.
    TupleTableSlot *slot = table_slot_create(rel, nullptr);
    for (;;) {
        TransactionId writer = hwm::IndexWriter(rel, index, keys, nkeys, slot, 0, nullptr, nullptr);
        if (!TransactionIdIsValid(writer))
            break;
        hwm::WaitForWriter(writer);
    }
    ExecDropSingleTupleTableSlot(slot);
}

}  // namespace fencing::pg
