// The direct path: the HWM row is found through the primary key index, locked
// (following its update chain to the newest version under READ COMMITTED, as
// EvalPlanQual does), compared, and raised in place. No planner, no executor.
// The row lock is held to commit. A missing row (a first write) falls back to
// the SPI path, which handles concurrent first writes.
#include "pg/hwm/raise_paths.hpp"

#include "pg/hwm/durability.hpp"
#include "pg/hwm/lock.hpp"
#include "pg/hwm/writers.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

namespace fencing::pg::hwm {
namespace {

void InsertIndexEntry(Relation rel, Relation index, HeapTuple tuple) {
    IndexInfo *info = BuildIndexInfo(index);
    Datum values[INDEX_MAX_KEYS];
    bool isnull[INDEX_MAX_KEYS];
    for (int i = 0; i < info->ii_NumIndexAttrs; ++i)
        values[i] =
            heap_getattr(tuple, info->ii_IndexAttrNumbers[i], RelationGetDescr(rel), &isnull[i]);
    index_insert(index, values, isnull, &tuple->t_self, rel, UNIQUE_CHECK_YES, false, info);
}

// Where this backend last found the newest version of an HWM row. Reading
// that version by its TID skips the B-tree descent of the primary key, most of
// the cost of a check at the HWM. Only a hint: the version there is read with
// the check's own snapshot and used only when that snapshot sees it and it
// still carries the key. Anything else (the row raised, reset or vacuumed
// since, the line pointer reused, the relation rewritten) goes to the index,
// which then gives the hint anew.
struct RowHint {
    Oid relid;  // InvalidOid: no hint
    Oid relfilenode;
    ItemPointerData tid;
};

void SetHint(RowHint *hint, Relation rel, ItemPointer tid) {
    hint->relid = RelationGetRelid(rel);
    hint->relfilenode = RelationStorageNumber(rel);
    hint->tid = *tid;
}

// The version at the hint's TID, into slot, when snapshot sees it and it
// carries a's key.
bool FetchHinted(DirectAccess *a, const RowHint *hint, Snapshot snapshot, TupleTableSlot *slot) {
    if (hint->relid != RelationGetRelid(a->rel) ||
        hint->relfilenode != RelationStorageNumber(a->rel))
        return false;
    // A TID past the end (the relation truncated by VACUUM) would be a read error.
    if (ItemPointerGetBlockNumber(&hint->tid) >= RelationGetNumberOfBlocks(a->rel))
        return false;
    ItemPointerData tid = hint->tid;
    return table_tuple_fetch_row_version(a->rel, &tid, snapshot, slot) && RowHasKey(a, slot);
}

// IndexWriter for the HWM row of a: through the hint when it holds, else
// through the index (refreshing the hint).
TransactionId ProbeDirty(DirectAccess *a, RowHint *hint, TupleTableSlot *slot, bool *found,
                         Token *value) {
    SnapshotData dirty;
    InitDirtySnapshot(dirty);
    if (FetchHinted(a, hint, &dirty, slot)) {
        // The same rule as IndexWriter: a version that dirty snapshot sees with
        // another transaction's xmin or xmax is a write in flight. A version
        // it sees without one is the row's only live version (the key is
        // unique), so there is nothing else to look at.
        TransactionId writer = InFlightWriter(dirty);
        if (TransactionIdIsValid(writer))
            return writer;
        bool isnull;
        *value = DatumGetInt64(slot_getattr(slot, a->hwm_attnum, &isnull));
        *found = true;
        return InvalidTransactionId;
    }
    OpenIndex(a);
    ItemPointerData tid;
    TransactionId writer = IndexWriter(a->rel, a->index, a->keys, a->scan_nkeys, slot,
                                       a->hwm_attnum, found, value, &tid);
    if (!TransactionIdIsValid(writer) && *found)
        SetHint(hint, a->rel, &tid);
    return writer;
}

// Takes the HWM lock in share mode and reads the HWM row with a dirty
// snapshot, as the unique check does: the committed value, or a raise (or
// first write, or reset) still in flight, whose transaction it waits for
// (after letting go of the share lock, so that its raiser may lock again)
// before reading again. Returns with the share lock held.
void ReadUnderShareLock(DirectAccess *a, const LOCKTAG *tag, RowHint *hint, TupleTableSlot *slot,
                        bool *found, Token *hwm) {
    for (;;) {
        LockHwmShared(tag);
        *found = false;
        *hwm = 0;
        TransactionId writer = ProbeDirty(a, hint, slot, found, hwm);
        if (!TransactionIdIsValid(writer))
            return;
        UnlockHwmShared(tag);
        WaitForWriter(writer);
    }
}

// Writers at the HWM (non-strict, the offered token equal to the committed
// HWM) run in parallel: each takes the HWM lock in share mode, held to
// commit, and no row lock. A raise takes the lock in exclusive mode until its
// new row version exists (DirectCheckAndRaise), so a writer admitted here
// commits before any raise above its token is visible, and one that arrives
// during a raise queues behind it and then sees it.
// True when settled: admitted (the share lock kept) or refused; false when
// the write raises or creates the HWM, or locks the row instead.
bool SettledAtHwm(const SharedHwm &h, Token offered, RowHint *hint, HwmVerdict *verdict,
                  bool *shared) {
    DirectAccess a;
    if (!MayTakeHwmShareLock() || !OpenDirectHeap(h.direct, AccessShareLock, h.key, &a))
        return false;
    TupleTableSlot *slot = table_slot_create(a.rel, nullptr);
    bool found;
    Token hwm;
    ReadUnderShareLock(&a, h.tag, hint, slot, &found, &hwm);
    bool admitted = found && hwm == offered;
    bool refused = found && hwm > offered;
    if (!admitted)
        UnlockHwmShared(h.tag);
    ExecDropSingleTupleTableSlot(slot);
    CloseDirect(&a);
    if (admitted)
        *verdict = {true, offered};
    *shared = admitted;
    if (refused)
        *verdict = {false, hwm};
    return admitted || refused;
}

// Whether a raise may be written in place (simple_heap_update), which fires
// no trigger: only while no UPDATE trigger of the HWM table would fire in
// this session. Such a trigger must see every raise: pg_repack's log
// trigger, which replays the writes made during its copy into the new heap
// before the swap (a raise it never saw would be lost), or an audit trigger
// a DBA added. With one, the SPI path's UPDATE settles the write, and fires
// it. The extension's own ENABLE REPLICA trigger (logical replication apply)
// fires only under session_replication_role = replica, so it is judged the
// way the executor judges it (TriggerEnabled in trigger.c). rel must be
// locked in RowExclusiveLock by this statement: a trigger is created or
// enabled under a lock that conflicts with it (CREATE/ALTER TRIGGER's
// ShareRowExclusiveLock, pg_repack's ACCESS EXCLUSIVE), so it committed
// before the lock was granted and the relcache, which took its invalidation
// when the lock was, shows it; and none can be created before this
// transaction ends.
bool WritesDirectly(Relation rel) {
    if (rel->trigdesc == nullptr)
        return true;
    bool replica = SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA;
    for (int i = 0; i < rel->trigdesc->numtriggers; ++i) {
        const Trigger &trigger = rel->trigdesc->triggers[i];
        if (!TRIGGER_FOR_UPDATE(trigger.tgtype) || trigger.tgenabled == TRIGGER_DISABLED)
            continue;
        bool fires = replica ? trigger.tgenabled != TRIGGER_FIRES_ON_ORIGIN
                             : trigger.tgenabled != TRIGGER_FIRES_ON_REPLICA;
        if (fires)
            return false;
    }
    return true;
}

// One check of the direct path, its table opened (RowExclusiveLock).
struct DirectCheck {
    const SharedHwm &h;
    Token offered;
    bool strict;
    RowHint *hint;
    HwmVerdict *verdict;
    DirectAccess a;
    Snapshot snapshot;
    TupleTableSlot *slot;
    ItemPointerData tid;  // of the version the snapshot sees
    // Admitted, and the HWM row's newest version, at the offered token, is
    // locked (or written) by this transaction: nobody else can raise or
    // delete it before this transaction (or the subtransaction that locked
    // it) ends.
    bool holds_row;
};

Token HwmInSlot(const DirectCheck &c) {
    bool isnull;
    return DatumGetInt64(slot_getattr(c.slot, c.a.hwm_attnum, &isnull));
}

// The row version the check's snapshot sees, into the slot: the hinted one
// when the snapshot sees it (the key is unique, so it is the version the
// index would give), else through the primary key index.
bool FindVisibleRow(DirectCheck *c) {
    bool found = FetchHinted(&c->a, c->hint, c->snapshot, c->slot);
    if (!found) {
        OpenIndex(&c->a);
        IndexScanDesc scan = BeginIndexScan(c->a.rel, c->a.index, c->snapshot, c->a.scan_nkeys, 0);
        index_rescan(scan, c->a.keys, c->a.scan_nkeys, nullptr, 0);
        found = index_getnext_slot(scan, ForwardScanDirection, c->slot);
        index_endscan(scan);
    }
    if (found)
        c->tid = c->slot->tts_tid;
    return found;
}

// Locks the newest version of the row (into the slot).
TM_Result LockNewestVersion(DirectCheck *c, LockWaitPolicy wait) {
    TM_FailureData failure;
    int flags = IsolationUsesXactSnapshot() ? 0 : TUPLE_LOCK_FLAG_FIND_LAST_VERSION;
    return table_tuple_lock(c->a.rel, &c->tid, c->snapshot, c->slot, GetCurrentCommandId(false),
                            LockTupleNoKeyExclusive, wait, flags, &failure);
}

// Writes the raised HWM as a new version of the locked row in the slot.
void RaiseInPlace(DirectCheck *c) {
    Relation rel = c->a.rel;
    bool should_free;
    HeapTuple old_version = ExecFetchSlotHeapTuple(c->slot, true, &should_free);
    // The HWM, and the time it was raised when the table keeps it (idle
    // time for retirement): one new version either way.
    Datum values[] = {Int64GetDatum(c->offered),
                      TimestampTzGetDatum(GetCurrentTransactionStartTimestamp())};
    bool nulls[] = {false, false};
    int attnums[] = {c->a.hwm_attnum, c->a.raised_at_attnum};
    int ncols = c->a.raised_at_attnum > 0 ? 2 : 1;
    HeapTuple raised = heap_modify_tuple_by_cols(old_version, RelationGetDescr(rel), ncols, attnums,
                                                 values, nulls);
    // We hold the row lock, so the update cannot meet a concurrent one. The
    // key columns do not change: with fillfactor 50 the new version is usually
    // heap-only and needs no index entry.
    SimpleHeapUpdate(rel, &c->slot->tts_tid, raised);
    if (!HeapTupleIsHeapOnly(raised)) {
        OpenIndex(&c->a);
        InsertIndexEntry(rel, c->a.index, raised);
    }
    SetHint(c->hint, rel, &raised->t_self);
    // Later rows of this statement must see the raised HWM.
    CommandCounterIncrement();
    NoteRaise(c->h, c->offered, c->strict);
}

// Settles the check on the outcome of locking the row. holds_exclusive: the
// HWM lock is held in exclusive mode already; it is let go on every path.
bool SettleOnLockedRow(DirectCheck *c, TM_Result result, bool holds_exclusive) {
    const LOCKTAG *tag = c->h.tag;
    if (result != TM_Ok) {
        if ((result == TM_Updated || result == TM_Deleted) && IsolationUsesXactSnapshot())
            ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                            errmsg("could not serialize access due to concurrent update of a "
                                   "fencing high-water mark")));
        // Otherwise (deleted by fencing_reset, or changed by this very
        // command) the SPI path settles it.
        if (holds_exclusive)
            UnlockHwmExclusive(tag);
        return false;
    }
    // The newest version, locked.
    SetHint(c->hint, c->a.rel, &c->slot->tts_tid);
    Token hwm = HwmInSlot(*c);
    bool admitted = Admitted(c->h, c->offered, hwm, c->strict);
    // A raise: as the snapshot showed, or lower than it showed (a reset).
    bool raise = admitted && c->offered > hwm;
    if (raise && !holds_exclusive)
        LockHwmExclusive(tag);
    if (raise)
        RaiseInPlace(c);
    *c->verdict = admitted ? HwmVerdict{true, c->offered} : HwmVerdict{false, hwm};
    c->holds_row = admitted && c->offered >= hwm;
    if (raise || holds_exclusive)
        UnlockHwmExclusive(tag);
    return true;
}

// The check on the row version the snapshot sees.
bool SettleOnVisibleRow(DirectCheck *c) {
    Token visible_hwm = HwmInSlot(*c);
    if (!Admitted(c->h, c->offered, visible_hwm, c->strict)) {
        // HWMs only rise, so the newest version refuses the token too: stale,
        // without taking a lock that would make the next writer wait for us.
        *c->verdict = {false, visible_hwm};
        return true;
    }
    // An equal token (strict: this transaction's own raise; non-strict: a
    // writer at the HWM that locks the row instead of sharing the HWM lock)
    // needs the row lock only.
    if (c->offered <= visible_hwm)
        return SettleOnLockedRow(c, LockNewestVersion(c, LockWaitBlock), false);
    // A raise as far as this snapshot tells.
    LockHwmExclusive(c->h.tag);
    TM_Result result = LockNewestVersion(c, LockWaitSkip);
    if (result != TM_WouldBlock)
        return SettleOnLockedRow(c, result, true);
    // Another raise is in flight (or a writer holds the row): wait for it
    // without the HWM lock, which its transaction may ask for again (a write
    // at the HWM it raised); the lock is taken again if this is still a raise.
    UnlockHwmExclusive(c->h.tag);
    return SettleOnLockedRow(c, LockNewestVersion(c, LockWaitBlock), false);
}

// True when settled (verdict filled in); false when the row does not exist,
// or when the SPI path must write it (WritesDirectly). A raise holds the HWM
// lock in exclusive mode from before it locks the row until its new row
// version exists: it waits for the writers admitted at the HWM before it, and
// those that come later see the raise (SettledAtHwm).
// holds_row: see DirectCheck.
bool DirectCheckAndRaise(const SharedHwm &h, Token offered, bool strict, RowHint *hint,
                         HwmVerdict *verdict, bool *holds_row) {
    DirectCheck c = {h, offered, strict, hint, verdict, {}, nullptr, nullptr, {}, false};
    if (!OpenDirectHeap(h.direct, RowExclusiveLock, h.key, &c.a))
        return false;
    if (!WritesDirectly(c.a.rel)) {
        CloseDirect(&c.a);
        return false;
    }
    c.snapshot = RegisterSnapshot(GetTransactionSnapshot());
    c.slot = table_slot_create(c.a.rel, nullptr);
    bool settled = FindVisibleRow(&c) && SettleOnVisibleRow(&c);
    ExecDropSingleTupleTableSlot(c.slot);
    UnregisterSnapshot(c.snapshot);
    CloseDirect(&c.a);
    *holds_row = settled && c.holds_row;
    return settled;
}

// The HWMs this backend last saw, by HWM lock: only a hint, choosing which
// mode to ask for first. A token above the HWM seen is most likely a raise,
// which then asks for the exclusive mode at once instead of sharing first;
// anything else tries the share mode first. Every verdict is reached under
// the lock either way. At most kSeenCapacity entries: when full, it starts
// over.
struct SeenHwm {
    LOCKTAG tag;  // hash key
    Token hwm;
    RowHint row;
    // Admitted at hwm under the HWM ShareLock, or the HWM row's lock, held by
    // this transaction to its end, while HwmStateEpoch() was admitted_epoch
    // (0: not so).
    uint64 admitted_epoch;
    // The HWM's identity (SharedHwm), which the verdict is remembered for:
    // two resources whose identities hash alike share a lock tag, never a
    // verdict. kUnknownIdentity: too long to keep (no verdict from memory).
    Size identity_len;
    char identity[64];
};
constexpr Size kUnknownIdentity = ~Size{0};
// The newest admitted_epoch of any entry: while it is not HwmStateEpoch(), no
// entry holds a verdict (the first write of each transaction asks no table).
uint64 newest_admitted_epoch = 0;
constexpr long kSeenCapacity = 1024;

void KeepIdentity(SeenHwm *e, const SharedHwm &h) {
    e->identity_len = h.identity_len <= sizeof(e->identity) ? h.identity_len : kUnknownIdentity;
    if (e->identity_len != kUnknownIdentity && h.identity_len > 0)
        memcpy(e->identity, h.identity, h.identity_len);
}

bool SameIdentity(const SeenHwm &e, const SharedHwm &h) {
    return e.identity_len == h.identity_len &&
           (h.identity_len == 0 || memcmp(e.identity, h.identity, h.identity_len) == 0);
}
HTAB *seen_hwms = nullptr;

SeenHwm *FindSeen(const LOCKTAG *tag) {
    if (seen_hwms == nullptr)
        return nullptr;
    return static_cast<SeenHwm *>(hash_search(seen_hwms, tag, HASH_FIND, nullptr));
}

void NoteSeen(const SharedHwm &h, Token hwm, const RowHint &row, uint64 admitted_epoch) {
    if (seen_hwms != nullptr && hash_get_num_entries(seen_hwms) >= kSeenCapacity) {
        hash_destroy(seen_hwms);
        seen_hwms = nullptr;
    }
    if (seen_hwms == nullptr) {
        HASHCTL ctl;
        ctl.keysize = sizeof(LOCKTAG);
        ctl.entrysize = sizeof(SeenHwm);
        ctl.hcxt = TopMemoryContext;
        seen_hwms =
            hash_create("fencing HWMs seen", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
    }
    auto *e = static_cast<SeenHwm *>(hash_search(seen_hwms, h.tag, HASH_ENTER, nullptr));
    e->hwm = hwm;
    e->row = row;
    e->admitted_epoch = admitted_epoch;
    KeepIdentity(e, h);
}

}  // namespace

bool AdmittedFromMemory(const SharedHwm &h, Token offered, bool strict) {
    // A write at the HWM this transaction was admitted at under the ShareLock
    // it still holds (no subtransaction that took it aborted since): no raise
    // or reset of another transaction can have come in between (each takes
    // the lock in exclusive mode), and this backend raised nothing since. The
    // same holds under the lock on the HWM row's newest version, taken where
    // the share locks ran out (MayTakeHwmShareLock: a statement writing many
    // resources): a raise, a reset or a retirement of another transaction
    // locks that row first. The same verdict, without a read: the rows of a
    // bulk statement after the first. Strict mode judges an equal token by
    // the raise registry: no shortcut.
    if (strict || newest_admitted_epoch != HwmStateEpoch())
        return false;
    const SeenHwm *seen = FindSeen(h.tag);
    return seen != nullptr && seen->admitted_epoch == HwmStateEpoch() && offered == seen->hwm &&
           SameIdentity(*seen, h);
}

bool SettleDirect(const SharedHwm &h, Token offered, bool strict, HwmVerdict *verdict) {
    // Nothing below touches seen_hwms, so the entry stays valid.
    SeenHwm *seen = FindSeen(h.tag);
    bool expect_raise = seen != nullptr && offered > seen->hwm;
    RowHint hint = {InvalidOid, InvalidOid, {}};
    if (seen != nullptr)
        hint = seen->row;
    bool shared = false;
    if ((strict || expect_raise || !SettledAtHwm(h, offered, &hint, verdict, &shared)) &&
        !DirectCheckAndRaise(h, offered, strict, &hint, verdict, &shared))
        return false;
    Token hwm = verdict->admitted ? offered : verdict->hwm;
    uint64 admitted_epoch = shared ? HwmStateEpoch() : 0;
    if (shared)
        newest_admitted_epoch = admitted_epoch;
    if (seen != nullptr) {
        seen->hwm = hwm;
        seen->row = hint;
        seen->admitted_epoch = admitted_epoch;
        KeepIdentity(seen, h);
    } else {
        NoteSeen(h, hwm, hint, admitted_epoch);
    }
    return true;
}

}  // namespace fencing::pg::hwm
