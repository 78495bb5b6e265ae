// The acquire path of fencing_acquire and fencing_acquire_all: the rights
// check, one attempt at a resource's lease row, the takeover wait for the
// HWM lock, the raise that issues a token, and the wait queue; see
// pg/api/lease_acquire.hpp.
#include "pg/api/lease_acquire.hpp"

#include "pg/api/lease_commit.hpp"
#include "pg/api/lease_row.hpp"
#include "pg/api/takeover.hpp"

#include "pg/hwm/durability.hpp"
#include "pg/hwm/store.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/catalog/namespaces.hpp"
#include "pg/base/stats.hpp"
#include "pg/catalog/subscriber.hpp"
#include "pg/catalog/citus_node.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
}

namespace fencing::pg {
namespace {

// How often a waiter looks again at a lease row another transaction holds
// locked (its commit may not wake anyone: an abort, or an acquire).
constexpr int64 kBusyPollUs = 10000;

// The token after t; 22003 when the token space is used up.
Token NextToken(Token t, const char *name_space, const char *resource) {
    if (t >= PG_INT64_MAX)
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("no fencing token is left to issue for resource %s (namespace %s)",
                               quote_literal_cstr(resource), quote_literal_cstr(name_space)),
                        errdetail("The last token issued, or the resource's high-water mark, is "
                                  "the largest fencing_token.")));
    return t + 1;
}

// The acquire's statements, prepared once per backend
// (pg/base/internal_access.hpp).
//
// Locks the row when the lease is free or is the holder's own live one, and
// skips it, without waiting, while another transaction holds it locked. A
// live lease of someone else is never locked: its holder's renew and release
// must not wait for a contender.
InternalStatement lease_claim = {"SELECT token, " LEASE_LIVE
                                 "  FROM fencing.lease"
                                 " WHERE " LEASE_KEY " AND (NOT " LEASE_LIVE
                                 " OR holder OPERATOR(pg_catalog.=) $3)"
                                 "   FOR UPDATE SKIP LOCKED",
                                 3,
                                 {TEXTOID, TEXTOID, TEXTOID},
                                 nullptr};
// The holder's own live lease only (a waiter's first look, before it queues).
InternalStatement lease_mine = {
    "SELECT token FROM fencing.lease"
    " WHERE " LEASE_KEY " AND holder OPERATOR(pg_catalog.=) $3 AND " LEASE_LIVE
    "   FOR UPDATE SKIP LOCKED",
    3,
    {TEXTOID, TEXTOID, TEXTOID},
    nullptr};
// Why lease_claim got nothing: no row, a live lease (until expires_at), or a
// row another transaction holds locked.
InternalStatement lease_peek = {"SELECT expires_at, " LEASE_LIVE
                                ", xmax::pg_catalog.text::pg_catalog.int8"
                                "  FROM fencing.lease WHERE " LEASE_KEY,
                                2,
                                {TEXTOID, TEXTOID},
                                nullptr};
InternalStatement lease_first = {
    "INSERT INTO fencing.lease (namespace, resource, holder, token, acquired_at,"
    "                           expires_at)"
    " SELECT $1, $2, $3, 1, c.now, c.now OPERATOR(pg_catalog.+) $4"
    "   FROM (SELECT pg_catalog.clock_timestamp() AS now) c"
    " ON CONFLICT (namespace, resource) DO NOTHING",
    4,
    {TEXTOID, TEXTOID, TEXTOID, INTERVALOID},
    nullptr};
InternalStatement lease_grant = {
    "UPDATE fencing.lease SET holder = $3, token = $4,"
    "       acquired_at = c.now, expires_at = c.now OPERATOR(pg_catalog.+) $5,"
    "       released_at = NULL"
    "  FROM (SELECT pg_catalog.clock_timestamp() AS now) c"
    " WHERE " LEASE_KEY,
    5,
    {TEXTOID, TEXTOID, TEXTOID, INT8OID, INTERVALOID},
    nullptr};
// A re-acquire by the holder of the live lease (its row locked by lease_claim).
InternalStatement lease_extend = {
    "UPDATE fencing.lease"
    "   SET expires_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $3"
    " WHERE " LEASE_KEY,
    3,
    {TEXTOID, TEXTOID, INTERVALOID},
    nullptr};
// Takeover: the last token issued, whether its lease is live, and who holds
// the row locked (a renew or an acquire in flight), when anyone.
InternalStatement lease_state = {"SELECT token, " LEASE_LIVE
                                 ", xmax::pg_catalog.text::pg_catalog.int8"
                                 " FROM fencing.lease WHERE " LEASE_KEY,
                                 2,
                                 {TEXTOID, TEXTOID},
                                 nullptr};

// lock_timeout in milliseconds for a wait of at most wait_us, never longer
// than the session's own lock_timeout. Without a wait (wait_us 0) the
// session's own: the row locks met after the checks are those of raises and
// first acquires begun in between, which commit at once, and a try must not
// fail on them with an error where it would return NULL.
int LockTimeoutFor(int64 wait_us) {
    if (wait_us <= 0)
        return LockTimeout;
    int64 ms = Max((wait_us + 999) / 1000, int64{1});
    if (ms > INT_MAX)
        ms = INT_MAX;
    if (LockTimeout > 0 && LockTimeout < ms)
        ms = LockTimeout;
    return static_cast<int>(ms);
}

// The first lease row of a resource. Busy while another transaction is
// writing it (checked first, so that the insert does not wait for it); the
// insert then waits only for a first acquire begun in between, at most
// wait_us (lock_timeout), then 55P03. No subtransaction: thousands of first
// acquires in one transaction stay linear. kAcquired: inserted; kRetry: a
// concurrent first acquire committed it first.
Attempt InsertFirstLease(Datum *values, const char *name_space, const char *resource, int64 wait_us,
                         TransactionId *locker) {
    *locker = LeaseRowWriter(name_space, resource);
    if (TransactionIdIsValid(*locker))
        return Attempt::kBusy;
    int saved = LockTimeout;
    LockTimeout = LockTimeoutFor(wait_us);
    MemoryContext context = CurrentMemoryContext;
    bool inserted = false;
    PG_TRY();
    { inserted = RunInternalStatement(&lease_first, values, nullptr) > 0; }
    PG_CATCH();
    {
        LockTimeout = saved;
        MemoryContextSwitchTo(context);
        ErrorData *error = CopyErrorData();
        if (error->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
            PG_RE_THROW();
        FlushErrorState();
        ereport(ERROR, (errcode(ERRCODE_LOCK_NOT_AVAILABLE),
                        errmsg("could not acquire the lease of resource %s: another transaction "
                               "is creating its lease row",
                               quote_literal_cstr(resource)),
                        errhint("Retry once that transaction has ended.")));
    }
    PG_END_TRY();
    LockTimeout = saved;
    return inserted ? Attempt::kAcquired : Attempt::kRetry;
}

// Why lease_claim found nothing to lock; inserts the first row when there is
// none (true: this transaction now holds it, *last = 0).
bool ClassifyUnclaimed(Datum *values, const char *name_space, const char *resource, int64 wait_us,
                       AttemptResult *why) {
    if (RunInternalStatement(&lease_peek, values, nullptr) > 0) {
        bool isnull;
        HeapTuple tup = SPI_tuptable->vals[0];
        TupleDesc desc = SPI_tuptable->tupdesc;
        TimestampTz expires_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 1, &isnull));
        bool live = DatumGetBool(SPI_getbinval(tup, desc, 2, &isnull));
        Datum xmax = SPI_getbinval(tup, desc, 3, &isnull);
        // Live and not the caller's: taken. Otherwise lease_claim would have
        // locked it, so another transaction holds it locked (xmax names it,
        // unless several lock it: then a multixact, which the wait skips).
        *why = {live ? Attempt::kTaken : Attempt::kBusy, 0, expires_at,
                static_cast<TransactionId>(DatumGetInt64(xmax))};
        return false;
    }
    TransactionId locker = InvalidTransactionId;
    Attempt inserted = InsertFirstLease(values, name_space, resource, wait_us, &locker);
    *why = {inserted, 0, 0, locker};
    return inserted == Attempt::kAcquired;
}

// Locks the resource's lease row when the lease can be granted to holder.
// True with *last (the last token issued, 0: none) and *mine (the holder's
// own live lease); else false with the reason in *refused.
bool ClaimLeaseRow(const char *name_space, const char *resource, const char *holder,
                   const Interval *ttl, int64 wait_us, Token *last, bool *mine,
                   AttemptResult *refused) {
    Datum values[] = {CStringGetTextDatum(name_space), CStringGetTextDatum(resource),
                      CStringGetTextDatum(holder), PointerGetDatum(ttl)};
    InternalSession session;
    BeginInternal(&session);
    bool claimed = RunInternalStatement(&lease_claim, values, nullptr) > 0;
    *last = 0;
    *mine = false;
    if (claimed) {
        bool isnull;
        HeapTuple tup = SPI_tuptable->vals[0];
        TupleDesc desc = SPI_tuptable->tupdesc;
        *last = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
        *mine = DatumGetBool(SPI_getbinval(tup, desc, 2, &isnull));
    } else {
        claimed = ClassifyUnclaimed(values, name_space, resource, wait_us, refused);
    }
    EndInternal(&session);
    return claimed;
}

// Fence: raise the resource's HWM to a token above both the last one issued
// and the HWM (a token from elsewhere may have been written). Returns it.
Token RaiseAboveHwm(const char *name_space, const char *resource, Token last) {
    Token token = NextToken(last, name_space, resource);
    for (int i = 0;; ++i) {
        // Strict: the new token must be above the HWM.
        HwmVerdict verdict = CheckAndRaiseResource(name_space, resource, token, true);
        if (verdict.admitted)
            return token;
        if (i >= 16)
            ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                            errmsg("could not issue a fencing token above the high-water mark "
                                   "of resource %s under concurrent writes",
                                   quote_literal_cstr(resource)),
                            errhint("Retry the transaction.")));
        token = NextToken(verdict.hwm, name_space, resource);
    }
}

// Writes the granted lease into the row this transaction holds locked:
// a new token, or (extend_only) the holder's live lease extended.
void WriteLease(const char *name_space, const char *resource, const char *holder, Token token,
                const Interval *ttl, bool extend_only) {
    InternalSession session;
    BeginInternal(&session);
    Datum ns = CStringGetTextDatum(name_space);
    Datum res = CStringGetTextDatum(resource);
    if (extend_only) {
        Datum values[] = {ns, res, PointerGetDatum(ttl)};
        RunInternalStatement(&lease_extend, values, nullptr);
    } else {
        Datum values[] = {ns, res, CStringGetTextDatum(holder), Int64GetDatum(token),
                          PointerGetDatum(ttl)};
        RunInternalStatement(&lease_grant, values, nullptr);
    }
    EndInternal(&session);
}

// Whether a higher token than the live lease's was accepted for the resource
// (fencing_resource_advance, or a write with a token from elsewhere): every
// write with the live token is refused then, so a re-acquire by its holder
// gets a new token instead of the fenced one.
bool LiveTokenFenced(const char *name_space, const char *resource, Token live) {
    InternalSession session;
    BeginInternal(&session);
    Token hwm = 0;
    bool fenced = ReadResourceHwm(name_space, resource, &hwm) && hwm > live;
    EndInternal(&session);
    return fenced;
}

// Whether the resource's lease has ended (expired or released, or there is
// none yet), its row not being written: then the acquire will raise the HWM,
// and *ended_token is the ended lease's token (0: none, or its row is being
// written: a renew or an acquire in flight, whose writers are not ended).
bool LeaseEnded(const char *name_space, const char *resource, Token *ended_token) {
    Datum values[] = {CStringGetTextDatum(name_space), CStringGetTextDatum(resource)};
    InternalSession session;
    BeginInternal(&session);
    bool ended = true;
    *ended_token = 0;
    if (RunInternalStatement(&lease_state, values, nullptr) > 0) {
        bool isnull;
        HeapTuple tup = SPI_tuptable->vals[0];
        TupleDesc desc = SPI_tuptable->tupdesc;
        Token token = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
        ended = !DatumGetBool(SPI_getbinval(tup, desc, 2, &isnull));
        auto locker =
            static_cast<TransactionId>(DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull)));
        bool written = TransactionIdIsValid(locker) && TransactionIdIsInProgress(locker);
        if (ended && !written)
            *ended_token = token;
    }
    EndInternal(&session);
    return ended;
}

Token RaiseWithin(const char *name_space, const char *resource, Token last, int64 wait_us) {
    // A row lock the raise may still meet (a raise of another token in
    // flight) is waited for within the wait too (55P03 then).
    int saved = LockTimeout;
    LockTimeout = LockTimeoutFor(wait_us);
    MemoryContext context = CurrentMemoryContext;
    Token token = 0;
    PG_TRY();
    { token = RaiseAboveHwm(name_space, resource, last); }
    PG_CATCH();
    {
        LockTimeout = saved;
        MemoryContextSwitchTo(context);
        ErrorData *error = CopyErrorData();
        if (error->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
            PG_RE_THROW();
        FlushErrorState();
        ereport(ERROR, (errcode(ERRCODE_LOCK_NOT_AVAILABLE),
                        errmsg("could not acquire the lease of resource %s within its wait",
                               quote_literal_cstr(resource)),
                        errdetail("Another transaction holds the resource's high-water mark "
                                  "row locked."),
                        errhint("Retry once that transaction has ended, or wait longer.")));
    }
    PG_END_TRY();
    LockTimeout = saved;
    return token;
}

// A re-acquire by the holder of the live lease, without queueing: a waiter
// must not queue behind those waiting for its own lease. True with *token
// when it was the holder's.
bool TryReacquire(const char *name_space, const char *resource, const char *holder,
                  const Interval *ttl, Token *token) {
    Datum values[] = {CStringGetTextDatum(name_space), CStringGetTextDatum(resource),
                      CStringGetTextDatum(holder)};
    InternalSession session;
    BeginInternal(&session);
    bool mine = RunInternalStatement(&lease_mine, values, nullptr) > 0;
    if (mine) {
        bool isnull;
        *token =
            DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    }
    EndInternal(&session);
    if (mine && LiveTokenFenced(name_space, resource, *token))
        return false;  // fenced: the ordinary path issues a new token
    if (mine) {
        WriteLease(name_space, resource, holder, *token, ttl, true);
        NoteLeaseExtended();
    }
    return mine;
}

// Takes the lock tag in mode through the lock manager's queue, waiting at
// most wait_us (lock_timeout). False when the wait ran out first (or the
// deadlock detector ended it). The wait
// runs in a subtransaction so that its timeout can be caught; the lock then
// passes to the (sub)transaction's resource owner, which owns it in the
// no-wait case too, so that UnlockWithin finds it either way.
bool LockWithin(const LOCKTAG *tag, LOCKMODE mode, int64 wait_us) {
    ResourceOwner owner = CurrentResourceOwner;
    CurrentResourceOwner = CurTransactionResourceOwner;
    bool granted = LockAcquire(tag, mode, false, true) != LOCKACQUIRE_NOT_AVAIL;
    CurrentResourceOwner = owner;
    if (granted)
        return true;
    if (wait_us <= 0)
        return false;
    MemoryContext context = CurrentMemoryContext;
    int saved = LockTimeout;
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(context);
    LockTimeout = LockTimeoutFor(wait_us);
    PG_TRY();
    { (void)LockAcquire(tag, mode, false, false); }
    PG_CATCH();
    {
        LockTimeout = saved;
        MemoryContextSwitchTo(context);
        ErrorData *error = CopyErrorData();
        FlushErrorState();
        EndSubTransaction(false, context, owner);
        // A deadlock can only be between waiters: a head waiting for a
        // row's locker that then queues for the same resource. The one the
        // detector picks stops waiting, as at a timeout.
        if (error->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE &&
            error->sqlerrcode != ERRCODE_T_R_DEADLOCK_DETECTED)
            ReThrowError(error);
        return false;
    }
    PG_END_TRY();
    LockTimeout = saved;
    EndSubTransaction(true, context, owner);
    return true;
}

// The resource's HWM lock in exclusive mode, within wait_us (0: only tried),
// for the raise that issues a new token, with no transaction holding the HWM
// row locked. While writers admitted at the HWM hold the lock (or the row),
// those writing with ended_token, the ended lease's (0: none), are ended,
// then waited for; the look is repeated every kTakeoverSliceUs, for writers
// admitted meanwhile. False when the wait ran out first.
constexpr int64 kTakeoverSliceUs = 50000;

bool LockForRaise(const LOCKTAG *tag, const char *name_space, const char *resource,
                  Token ended_token, int64 wait_us) {
    instr_time started;
    INSTR_TIME_SET_CURRENT(started);
    List *signalled = NIL;
    int polls = 0;
    bool held = false;
    for (;;) {
        if (!held)
            held = LockWithin(tag, ExclusiveLock, 0);
        bool row_locked = false;
        int ending =
            EndWritersOfEndedLease(name_space, resource, ended_token, &signalled, &row_locked);
        // The raise would also wait for a transaction holding the HWM row
        // locked: only taken when there is none.
        if (held && !row_locked)
            return true;
        int64 left_us = wait_us - MicrosSince(started);
        if (left_us <= 0) {
            if (held)
                UnlockWithin(tag, ExclusiveLock);
            return false;
        }
        if (held || ending > 0 || signalled != NIL) {
            // Ended backends roll back in a few milliseconds (and leave the
            // proc array before they let go of their locks): look again
            // without queueing behind them, every millisecond at first.
            long sleep_ms = ++polls > 50 ? 10 : 1;
            (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, sleep_ms,
                            PG_WAIT_EXTENSION);
            ResetLatch(MyLatch);
        } else if (LockWithin(tag, ExclusiveLock, Min(left_us, kTakeoverSliceUs))) {
            held = true;
        }
        CHECK_FOR_INTERRUPTS();
    }
}

// Waits, at most wait_us, for the transaction that holds a lease row locked
// to end (as a row lock wait does, but bounded); false when it is not
// running (a multixact's number, or it has ended).
bool WaitForLocker(TransactionId locker, int64 wait_us) {
    if (!TransactionIdIsValid(locker) || TransactionIdIsCurrentTransactionId(locker) ||
        !TransactionIdIsInProgress(locker))
        return false;
    LOCKTAG tag;
    SET_LOCKTAG_TRANSACTION(tag, locker);
    if (LockWithin(&tag, ShareLock, wait_us))
        UnlockWithin(&tag, ShareLock);
    return true;
}

}  // namespace

int64 MicrosSince(instr_time started) {
    instr_time now;
    INSTR_TIME_SET_CURRENT(now);
    INSTR_TIME_SUBTRACT(now, started);
    return static_cast<int64>(INSTR_TIME_GET_MICROSEC(now));
}

// Ends the subtransaction the caller began: kept or rolled back, then back
// to the caller's memory context and resource owner.
void EndSubTransaction(bool keep, MemoryContext context, ResourceOwner owner) {
    if (keep)
        ReleaseCurrentSubTransaction();
    else
        RollbackAndReleaseCurrentSubTransaction();
    MemoryContextSwitchTo(context);
    CurrentResourceOwner = owner;
}

void UnlockWithin(const LOCKTAG *tag, LOCKMODE mode) {
    ResourceOwner owner = CurrentResourceOwner;
    CurrentResourceOwner = CurTransactionResourceOwner;
    LockRelease(tag, mode, false);
    CurrentResourceOwner = owner;
}

// The rights fencing_acquire asks for; on_subscriber names what a subscriber
// refuses (nullptr: a read, allowed there).
void RequireAcquireRights(const char *name_space, const char *on_subscriber, const char *action) {
    Oid caller = GetUserId();
    if (on_subscriber != nullptr)
        RefuseLeaseOnSubscriber(on_subscriber);
    RefuseOnCitus(CitusAction::kLease, InvalidOid, Scope::kRow);
    InternalSession session;
    BeginInternal(&session);
    RequireNamespaceWriter(name_space, caller, action);
    EndInternal(&session);
}

// One attempt, in the caller's transaction: no subtransaction, so acquiring
// many leases in one transaction costs the same per lease. A refused attempt
// leaves no row locked (lease_claim locks only a row it grants).
//
// The raise waits for the writers admitted at the current HWM. So when the
// lease has ended, the HWM lock is taken first, within the wait, the writers
// of the ended lease ended (pg/api/takeover.hpp); when it cannot be had in
// time the attempt is kBusy, nothing claimed. (A re-acquire of a live lease
// whose token was fenced raises too: it takes the lock after the claim, and
// when it cannot, its row stays locked until the caller's transaction ends.)
AttemptResult TryAcquire(const char *name_space, const char *resource, const char *holder,
                         const Interval *ttl, int64 wait_us) {
    LOCKTAG raise_tag;
    ResourceRaiseLockTag(&raise_tag, name_space, resource);
    Token ended_token = 0;
    bool locked = false;
    if (LeaseEnded(name_space, resource, &ended_token)) {
        if (!LockForRaise(&raise_tag, name_space, resource, ended_token, wait_us))
            return {Attempt::kBusy, 0, 0, InvalidTransactionId};
        locked = true;
    }
    Token last = 0;
    bool mine = false;
    AttemptResult refused;
    bool claimed =
        ClaimLeaseRow(name_space, resource, holder, ttl, wait_us, &last, &mine, &refused);
    bool reacquired = claimed && mine && !LiveTokenFenced(name_space, resource, last);
    if (locked && (!claimed || reacquired))
        UnlockWithin(&raise_tag, ExclusiveLock);
    if (!claimed)
        return refused;
    if (reacquired) {
        // The holder's own live lease: the same token, no raise, no new
        // issue to make durable (as a renew).
        WriteLease(name_space, resource, holder, last, ttl, true);
        NoteLeaseExtended();
        return {Attempt::kReacquired, last, 0, InvalidTransactionId};
    }
    if (!locked && !LockForRaise(&raise_tag, name_space, resource, 0, wait_us))
        return {Attempt::kBusy, 0, 0, InvalidTransactionId};
    Token token = RaiseWithin(name_space, resource, last, wait_us);
    UnlockWithin(&raise_tag, ExclusiveLock);
    WriteLease(name_space, resource, holder, token, ttl, false);
    // Issuing a token must survive any crash or failover, whatever
    // synchronous_commit says (the HWM raise already asked for it too).
    NoteHwmRaised();
    return {Attempt::kAcquired, token, 0, InvalidTransactionId};
}

// Takes the resource's wait queue lock (ExclusiveLock on its tag), queueing
// behind earlier waiters in the lock manager's arrival order, for at most
// wait_us. False when the wait ran out first.
bool JoinWaitQueue(const LOCKTAG *tag, int64 wait_us) {
    return LockWithin(tag, ExclusiveLock, wait_us);
}

// Sleeps until the live lease expires or the wait ends (left_us from now),
// whichever is first, or until a release or renew of it wakes this backend.
// A row another transaction holds locked is looked at again soon.
void SleepForLease(const AttemptResult &r, int64 left_us) {
    if (r.outcome == Attempt::kBusy && WaitForLocker(r.locker, left_us)) {
        CHECK_FOR_INTERRUPTS();
        return;
    }
    int64 until_us =
        r.outcome == Attempt::kTaken ? r.expires_at - GetCurrentTimestamp() : kBusyPollUs;
    int64 sleep_us = Min(left_us, Max(until_us, int64{0}));
    // Whole milliseconds, rounded up, at least 1, at most a day at a time.
    long sleep_ms = static_cast<long>(Min((sleep_us + 999) / 1000, int64{86400000}));
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, Max(sleep_ms, 1L),
                    PG_WAIT_EXTENSION);
    CHECK_FOR_INTERRUPTS();
}

// The result of fencing_acquire for one resource.
Datum AcquireOne(FunctionCallInfo fcinfo, const LeaseRequest &req, const char *resource) {
    // The wait is measured on the monotonic clock; lease expiry on the
    // server's wall clock (clock_timestamp()), as stored.
    instr_time started;
    INSTR_TIME_SET_CURRENT(started);
    LOCKTAG tag;
    LeaseLockTag(&tag, req.name_space, resource);
    // Waiters queue first, so that they are served in arrival order (the
    // holder of the live lease excepted); a non-waiting call only tries.
    Token mine = 0;
    if (req.waits && TryReacquire(req.name_space, resource, req.holder, req.ttl, &mine)) {
        CountAcquire(req.name_space, resource, true, false, MicrosSince(started), mine);
        PG_RETURN_INT64(mine);
    }
    if (req.waits && !JoinWaitQueue(&tag, req.wait_us)) {
        CountAcquire(req.name_space, resource, false, true, MicrosSince(started), 0);
        PG_RETURN_NULL();
    }
    bool contended = false;  // another lease was live, or its row locked, at least once
    for (int retries = 0;;) {
        ResetLatch(MyLatch);
        int64 left_us = req.wait_us - MicrosSince(started);
        AttemptResult r = TryAcquire(req.name_space, resource, req.holder, req.ttl, left_us);
        if (r.outcome == Attempt::kRetry) {
            if (++retries > 8)
                ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                                errmsg("could not acquire the lease of resource %s under "
                                       "concurrent first acquires",
                                       quote_literal_cstr(resource)),
                                errhint("Retry the transaction.")));
            continue;
        }
        int64 waited_us = MicrosSince(started);
        left_us = req.wait_us - waited_us;
        bool done = Granted(r) || !req.waits || left_us <= 0;
        if (!Granted(r))
            contended = true;
        if (done) {
            if (req.waits)
                UnlockWithin(&tag, ExclusiveLock);
            CountAcquire(req.name_space, resource, Granted(r), contended, waited_us, r.token);
            if (!Granted(r))
                PG_RETURN_NULL();
            PG_RETURN_INT64(r.token);
        }
        SleepForLease(r, left_us);
    }
}

}  // namespace fencing::pg
