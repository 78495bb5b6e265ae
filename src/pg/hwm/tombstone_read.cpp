// Tombstone reads and raises of the HWM store (pg/hwm/store.hpp): through
// row_tombstone's lookup index or primary key when the table has the direct
// path's shape, else through SPI.
#include "pg/hwm/durability.hpp"
#include "pg/hwm/raise_paths.hpp"
#include "pg/hwm/removed_rows.hpp"
#include "pg/hwm/store.hpp"
#include "pg/hwm/store_sql.hpp"
#include "pg/hwm/writers.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/genam.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

namespace fencing::pg {

using hwm::CloseDirect;
using hwm::DirectAccess;
using hwm::FirstInt8;
using hwm::IndexWriter;
using hwm::OpenDirectHeap;
using hwm::OpenIndex;
using hwm::RowHasKey;
using hwm::tombstone_direct;
using hwm::tombstone_raise;
using hwm::tombstone_read;
using hwm::WaitForWriter;

namespace {

// LookupValue for a one-dimensional text[] without NULLs (every key the
// guard builds): the key's bytes copied, one element appended, as
// construct_md_array lays it out (each element INTALIGNed); nullptr for any
// other array.
Datum AppendedLookupValue(ArrayType *array, Oid home_relid) {
    Size old_data = ARR_SIZE(array) - ARR_DATA_OFFSET(array);
    if (ARR_NDIM(array) != 1 || ARR_HASNULL(array) || ARR_LBOUND(array)[0] != 1 ||
        ARR_ELEMTYPE(array) != TEXTOID || old_data != INTALIGN(old_data))
        return NullPointerDatum();
    char relid_text[16];
    int len = snprintf(relid_text, sizeof(relid_text), "%u", home_relid);
    Size element = VARHDRSZ + len;
    Size nbytes = ARR_OVERHEAD_NONULLS(1) + old_data + INTALIGN(element);
    auto *out = static_cast<ArrayType *>(palloc0(nbytes));
    SET_VARSIZE(out, nbytes);
    out->ndim = 1;
    out->dataoffset = 0;
    out->elemtype = TEXTOID;
    ARR_DIMS(out)[0] = ARR_DIMS(array)[0] + 1;
    ARR_LBOUND(out)[0] = 1;
    memcpy(ARR_DATA_PTR(out), ARR_DATA_PTR(array), old_data);
    char *tail = ARR_DATA_PTR(out) + old_data;
    SET_VARSIZE(tail, element);
    memcpy(VARDATA(tail), relid_text, len);
    return PointerGetDatum(out);
}

// The lookup index's value for the key: the key's elements and the relid's
// decimal text (oidout), as array_append(key, relid::oid::text) computes it.
Datum LookupValue(Oid home_relid, Datum key) {
    ArrayType *array = DatumGetArrayTypeP(key);
    Datum appended = AppendedLookupValue(array, home_relid);
    if (DatumGetPointer(appended) != nullptr)
        return appended;
    Datum *elems;
    bool *nulls;
    int n;
    deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
    elems = static_cast<Datum *>(repalloc(elems, (n + 1) * sizeof(Datum)));
    nulls = static_cast<bool *>(repalloc(nulls, (n + 1) * sizeof(bool)));
    elems[n] = CStringGetTextDatum(psprintf("%u", home_relid));
    nulls[n] = false;
    int dims[] = {n + 1};
    int lbs[] = {1};
    return PointerGetDatum(
        construct_md_array(elems, nulls, 1, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT));
}

// Opens the index a tombstone read goes through: the lookup index when
// row_tombstone has it (one scan key; returns a, whose key the caller must
// recheck on every row the scan returns, which holds every row of the
// value's hash), else the primary key (returns nullptr).
const DirectAccess *OpenTombstoneIndex(DirectAccess *a, Oid home_relid, Datum key) {
    if (!OidIsValid(a->lookup_relid)) {
        OpenIndex(a);
        return nullptr;
    }
    a->index = index_open(a->lookup_relid, a->mode);
    ScanKeyEntryInitialize(&a->keys[0], 0, 1, HTEqualStrategyNumber, InvalidOid,
                           a->index->rd_indcollation[0], F_ARRAY_EQ, LookupValue(home_relid, key));
    a->scan_nkeys = 1;
    return a;
}

// The key's tombstone through row_tombstone's lookup index (else its primary
// key index), read with the latest snapshot. No internal session is needed:
// nothing runs but an index scan on the extension's table (no SQL, no permission check; the
// caller's grants and RLS cannot apply, as under the internal session's
// owner). The AccessShareLock is held to commit, as the SPI read's would be.
// False when the table is not of the direct path's shape.
bool LookupTombstoneDirect(Oid home_relid, Datum key, Token *hwm, bool *found) {
    Datum values[] = {ObjectIdGetDatum(home_relid), key};
    DirectAccess a;
    if (!OpenDirectHeap(&tombstone_direct, AccessShareLock, values, &a))
        return false;
    const DirectAccess *recheck = OpenTombstoneIndex(&a, home_relid, key);
    Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
    TupleTableSlot *slot = table_slot_create(a.rel, nullptr);
    IndexScanDesc scan = BeginIndexScan(a.rel, a.index, snapshot, a.scan_nkeys, 0);
    index_rescan(scan, a.keys, a.scan_nkeys, nullptr, 0);
    while ((*found = index_getnext_slot(scan, ForwardScanDirection, slot)) && recheck != nullptr &&
           !RowHasKey(recheck, slot)) {
    }
    if (*found) {
        bool isnull;
        Datum d = slot_getattr(slot, a.hwm_attnum, &isnull);
        *hwm = isnull ? 0 : DatumGetInt64(d);
    }
    index_endscan(scan);
    ExecDropSingleTupleTableSlot(slot);
    UnregisterSnapshot(snapshot);
    CloseDirect(&a);
    return true;
}

// The same read through SPI (a row_tombstone not of the direct path's
// shape); the caller is inside an internal session.
bool LookupTombstoneViaSpi(Oid home_relid, Datum key, Token *hwm) {
    Datum args[] = {ObjectIdGetDatum(home_relid), key};
    int rc = SPI_execute_snapshot(InternalPlan(&tombstone_read), args, nullptr, GetLatestSnapshot(),
                                  InvalidSnapshot, true, false, 1);
    if (rc < 0)
        ereport(ERROR,
                (errcode(ERRCODE_INTERNAL_ERROR),
                 errmsg("fencing: internal statement failed: %s", SPI_result_code_string(rc))));
    return FirstInt8(hwm);
}

// LookupTombstoneViaSpi in an internal session of its own.
bool LookupTombstoneInSession(Oid home_relid, Datum key, Token *hwm) {
    InternalSession access;
    BeginInternal(&access);
    bool found = LookupTombstoneViaSpi(home_relid, key, hwm);
    EndInternal(&access);
    return found;
}

// A key whose tombstone was not found: judged against the table's floor,
// read (with the latest snapshot) only now, after the key's own read came
// back empty. A retirement that deleted the tombstone raised the floor in the
// same transaction. A found tombstone is judged at least at the floor: a fold
// (pg/hwm/removed_rows.hpp) raises the floor over removed keys that may keep
// an older tombstone of their own.
bool OrFloor(bool found, Oid home_relid, Token *hwm, bool *floor) {
    if (floor != nullptr)
        *floor = false;
    Token value = TombstoneFloor(home_relid);
    if (found && value <= *hwm)
        return true;
    if (value <= 0)
        return false;
    *hwm = value;
    if (floor != nullptr)
        *floor = true;
    return true;
}

}  // namespace

// The latest snapshot, not the transaction's: under REPEATABLE READ a
// tombstone committed after our snapshot must still stop a stale INSERT.
bool LookupTombstone(Oid home_relid, Datum key, Token *hwm, bool *floor) {
    WriteDeferredRemovals(home_relid);
    bool found;
    if (!LookupTombstoneDirect(home_relid, key, hwm, &found))
        found = LookupTombstoneViaSpi(home_relid, key, hwm);
    return OrFloor(found, home_relid, hwm, floor);
}

bool ReadTombstone(Oid home_relid, Datum key, Token *hwm, bool *floor) {
    WriteDeferredRemovals(home_relid);
    bool found;
    if (!LookupTombstoneDirect(home_relid, key, hwm, &found))
        found = LookupTombstoneInSession(home_relid, key, hwm);
    return OrFloor(found, home_relid, hwm, floor);
}

void RaiseTombstone(Oid home_relid, Datum key, Token hwm) {
    Datum args[] = {ObjectIdGetDatum(home_relid), key, Int64GetDatum(hwm)};
    // Written or raised; in replica mode possibly written by the replica
    // trigger instead (ReplicaTriggerMayWrite).
    InternalStatement *raise =
        StoreHasRaisedAt("row_tombstone") ? &hwm::tombstone_raise_stamped : &tombstone_raise;
    if (hwm::Run(raise, args) > 0 || hwm::ReplicaTriggerMayWrite())
        NoteHwmRaised();
}

bool NoTombstoneStored(Oid home_relid) {
    WriteDeferredRemovals(home_relid);
    // The primary key (relid, key) scanned on its first column alone.
    Datum values[] = {ObjectIdGetDatum(home_relid), Datum(0)};
    DirectAccess a;
    if (!OpenDirectHeap(&tombstone_direct, AccessShareLock, values, &a))
        return false;
    OpenIndex(&a);
    SnapshotData dirty;
    InitDirtySnapshot(dirty);
    TupleTableSlot *slot = table_slot_create(a.rel, nullptr);
    IndexScanDesc scan = BeginIndexScan(a.rel, a.index, &dirty, 1, 0);
    index_rescan(scan, a.keys, 1, nullptr, 0);
    // Any version a dirty snapshot shows counts: committed, or one whose
    // insertion or deletion is still in flight.
    bool any = index_getnext_slot(scan, ForwardScanDirection, slot);
    index_endscan(scan);
    ExecDropSingleTupleTableSlot(slot);
    CloseDirect(&a);
    return !any;
}

bool UnstoredKeyFloor(Oid home_relid, Token *hwm, bool *floor) {
    return OrFloor(false, home_relid, hwm, floor);
}

// One dirty-snapshot look at the key's index entries per round, as the unique
// check does, until no other transaction is writing the key's tombstone; the
// value the last round read (the highest, as IndexWriter keeps it) is the
// answer. That is what "wait for the writers, then read with the latest
// snapshot" returns, in one scan instead of two:
//   * a version whose writer (an insert, a raise, a reset's delete) is still
//     in flight is never read: the round waits for that writer and looks
//     again, so its commit or abort decides;
//   * with no writer in flight, a dirty snapshot sees what committed and what
//     this transaction wrote (RaiseTombstone's statement advanced the command
//     counter): what GetLatestSnapshot() would show, under REPEATABLE READ
//     too;
//   * a writer that comes after the round passed the key finds this
//     transaction's row holding the key in the table's primary key index: a
//     DELETE of the key cannot see it before this transaction commits, and
//     fencing_advance() waits for it (WaitForKeyWritersOf).
// Through the lookup (hash) index, rows of other keys with the same hash value
// are skipped, their writers not waited for; every tombstone write (one SQL
// statement) has made its lookup entry before it returns, as its primary
// key's.
bool TombstoneAfterWriters(Oid home_relid, Datum key, Token *hwm, bool *floor) {
    WriteDeferredRemovals(home_relid);
    Datum values[] = {ObjectIdGetDatum(home_relid), key};
    DirectAccess a;
    if (!OpenDirectHeap(&tombstone_direct, AccessShareLock, values, &a)) {
        hwm::WaitForAllWriters(&tombstone_direct);
        return OrFloor(LookupTombstoneInSession(home_relid, key, hwm), home_relid, hwm, floor);
    }
    const DirectAccess *recheck = OpenTombstoneIndex(&a, home_relid, key);
    TupleTableSlot *slot = table_slot_create(a.rel, nullptr);
    bool found = false;
    Token value = 0;
    for (;;) {
        TransactionId writer = IndexWriter(a.rel, a.index, a.keys, a.scan_nkeys, slot, a.hwm_attnum,
                                           &found, &value, nullptr, recheck);
        if (!TransactionIdIsValid(writer))
            break;
        WaitForWriter(writer);
    }
    ExecDropSingleTupleTableSlot(slot);
    CloseDirect(&a);
    if (found)
        *hwm = value;
    // Waited for every writer of the key's tombstone, a retirement's delete
    // among them: its floor raise has committed with it.
    return OrFloor(found, home_relid, hwm, floor);
}

}  // namespace fencing::pg
