// fencing_acquire, fencing_acquire_all, fencing_check, fencing_renew and
// fencing_release: see pg/api/leases.hpp.
#include "pg/api/leases.hpp"

#include "pg/api/lease_row.hpp"
#include "pg/api/takeover.hpp"

#include "pg/base/boundary.hpp"
#include "pg/hwm/durability.hpp"
#include "pg/hwm/store.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/catalog/namespaces.hpp"
#include "pg/base/stats.hpp"
#include "pg/catalog/subscriber.hpp"
#include "pg/keys/resource_key.hpp"
#include "pg/api/hwm_args.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "optimizer/cost.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/sinvaladt.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
}

namespace fencing::pg {
namespace {

// objsubid of the advisory lock tags of lease wait queues ('DE'); user
// advisory locks use 1 and 2.
constexpr uint16 kLeaseLockField4 = 0x4445;

// How often a waiter looks again at a lease row another transaction holds
// locked (its commit may not wake anyone: an abort, or an acquire).
constexpr int64 kBusyPollUs = 10000;

void LeaseLockTag(LOCKTAG *tag, const char *name_space, const char *resource) {
    StringInfoData buf;
    initStringInfo(&buf);
    appendBinaryStringInfo(&buf, name_space, static_cast<int>(strlen(name_space)) + 1);
    appendStringInfoString(&buf, resource);
    uint64 h = DatumGetUInt64(
        hash_any_extended(reinterpret_cast<const unsigned char *>(buf.data), buf.len, 0));
    SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, static_cast<uint32>(h >> 32), static_cast<uint32>(h),
                         kLeaseLockField4);
}

// Lease changes of this transaction whose waiters must be woken at commit.
List *pending_wakeups = NIL;  // of LOCKTAG *, in TopTransactionContext

// The commit of a transaction whose only writes are releases and renews of
// leases need not wait for its WAL flush (pg/api/leases.hpp).
enum class LeaseCommit { kNone, kCheap, kDurable };
LeaseCommit lease_commit = LeaseCommit::kNone;
XLogRecPtr lease_commit_end = InvalidXLogRecPtr;  // XactLastRecEnd after the last change
int lowered_synchronous_commit = -1;              // the session's value while lowered

// A release or renew changed a row. before: XactLastRecEnd when the call
// started; had_xid: whether the transaction had an xid then. It stays cheap
// only while nothing but these changes wrote WAL.
void NoteLeaseChange(bool had_xid, XLogRecPtr before) {
    bool only_leases =
        !had_xid || (lease_commit == LeaseCommit::kCheap && before == lease_commit_end);
    if (!only_leases || lease_commit == LeaseCommit::kDurable) {
        lease_commit = LeaseCommit::kDurable;
        return;
    }
    lease_commit = LeaseCommit::kCheap;
    lease_commit_end = XactLastRecEnd;
}

// A renewal or a re-acquire extended a lease. Clients count a lease's safe
// time from the send time of the last renewal they saw succeed and signal it
// lost before the expiry that renewal wrote; a renewal lost in a crash or a
// failover would bring back an earlier expiry, and another holder could take
// the lease while the client still counts it live. So the commit is durable,
// as an acquire's, and nothing in the transaction lowers it.
void NoteLeaseExtended() {
    lease_commit = LeaseCommit::kDurable;
    NoteDurableChange();
}

void LowerCommitIfOnlyLeases() {
    if (lease_commit != LeaseCommit::kCheap || XactLastRecEnd != lease_commit_end ||
        synchronous_commit == SYNCHRONOUS_COMMIT_OFF)
        return;
    lowered_synchronous_commit = synchronous_commit;
    synchronous_commit = SYNCHRONOUS_COMMIT_OFF;
    assign_synchronous_commit(SYNCHRONOUS_COMMIT_OFF, nullptr);
}

void EndLeaseCommit() {
    if (lowered_synchronous_commit >= 0) {
        synchronous_commit = lowered_synchronous_commit;
        assign_synchronous_commit(lowered_synchronous_commit, nullptr);
        lowered_synchronous_commit = -1;
    }
    lease_commit = LeaseCommit::kNone;
    lease_commit_end = InvalidXLogRecPtr;
}

void WakePendingWaiters() {
    ListCell *lc;
    foreach (lc, pending_wakeups) {
        int count = 0;
        VirtualTransactionId *vxids =
            GetLockConflicts(static_cast<LOCKTAG *>(lfirst(lc)), ExclusiveLock, &count);
        for (int i = 0; i < count; ++i) {
            PGPROC *proc = ProcOfVirtualTransaction(vxids[i]);
            if (proc != nullptr)
                SetLatch(&proc->procLatch);
        }
    }
}

void OnLeaseXactEvent(XactEvent event, void *) {
    switch (event) {
        case XACT_EVENT_PRE_COMMIT:
            // Not at PRE_PREPARE: a prepared transaction keeps its mode.
            LowerCommitIfOnlyLeases();
            return;
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_PARALLEL_COMMIT:
            WakePendingWaiters();
            break;
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PARALLEL_ABORT:
        case XACT_EVENT_PREPARE:
            break;
        default:
            return;
    }
    pending_wakeups = NIL;
    EndLeaseCommit();
}

void WakeWaitersAtCommit(const char *name_space, const char *resource) {
    MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
    auto *tag = static_cast<LOCKTAG *>(palloc(sizeof(LOCKTAG)));
    LeaseLockTag(tag, name_space, resource);
    pending_wakeups = lappend(pending_wakeups, tag);
    MemoryContextSwitchTo(old);
}

// An interval as interval_cmp sees it (30-day months, 24-hour days), in
// microseconds, saturating.
int64 IntervalMicros(const Interval *span) {
    __int128 us = static_cast<__int128>(span->time) +
                  static_cast<__int128>(span->day) * USECS_PER_DAY +
                  static_cast<__int128>(span->month) * DAYS_PER_MONTH * USECS_PER_DAY;
    if (us > PG_INT64_MAX)
        return PG_INT64_MAX;
    if (us < PG_INT64_MIN)
        return PG_INT64_MIN;
    return static_cast<int64>(us);
}

const Interval *PositiveInterval(FunctionCallInfo fcinfo, int n, const char *argname) {
    if (PG_ARGISNULL(n))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be NULL", argname)));
    const Interval *span = PG_GETARG_INTERVAL_P(n);
    if (IntervalMicros(span) <= 0)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s must be positive", argname)));
    return span;
}

char *TextArg(FunctionCallInfo fcinfo, int n, const char *argname) {
    if (PG_ARGISNULL(n))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be NULL", argname)));
    return text_to_cstring(PG_GETARG_TEXT_PP(n));
}

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

#define LEASE_KEY "namespace OPERATOR(pg_catalog.=) $1 AND resource OPERATOR(pg_catalog.=) $2"
#define LEASE_LIVE \
    "(released_at IS NULL AND expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())"

// The lease statements, prepared once per backend (pg/base/internal_access.hpp).
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
InternalStatement lease_renew = {
    "UPDATE fencing.lease"
    "   SET expires_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $4"
    " WHERE " LEASE_KEY " AND token OPERATOR(pg_catalog.=) $3 AND " LEASE_LIVE,
    4,
    {TEXTOID, TEXTOID, INT8OID, INTERVALOID},
    nullptr};
InternalStatement lease_release = {
    "UPDATE fencing.lease SET released_at = pg_catalog.clock_timestamp()"
    " WHERE " LEASE_KEY " AND token OPERATOR(pg_catalog.=) $3 AND " LEASE_LIVE
    " RETURNING acquired_at",
    3,
    {TEXTOID, TEXTOID, INT8OID},
    nullptr};
// After a refused renew or release (counters only): whether the token's
// lease ran out under its holder, i.e. a later token was issued, or the
// token's own lease expired without being released.
InternalStatement lease_lost = {
    "SELECT 1 FROM fencing.lease"
    " WHERE " LEASE_KEY
    "   AND (token OPERATOR(pg_catalog.>) $3"
    "        OR (token OPERATOR(pg_catalog.=) $3 AND released_at IS NULL))",
    3,
    {TEXTOID, TEXTOID, INT8OID},
    nullptr};
// Takeover: the last token issued, whether its lease is live, and who holds
// the row locked (a renew or an acquire in flight), when anyone.
InternalStatement lease_state = {"SELECT token, " LEASE_LIVE
                                 ", xmax::pg_catalog.text::pg_catalog.int8"
                                 " FROM fencing.lease WHERE " LEASE_KEY,
                                 2,
                                 {TEXTOID, TEXTOID},
                                 nullptr};
// fencing_check: the last token issued and whether its lease is live.
InternalStatement lease_current = {"SELECT token, " LEASE_LIVE
                                   " FROM fencing.lease WHERE " LEASE_KEY,
                                   2,
                                   {TEXTOID, TEXTOID},
                                   nullptr};

// kAcquired: a new token. kReacquired: the holder's own live token, its lease
// extended. kTaken: another holder's live lease, until expires_at. kBusy:
// another transaction holds the row locked. kRetry: a concurrent first
// acquire won the insert.
enum class Attempt { kAcquired, kReacquired, kTaken, kBusy, kRetry };

struct AttemptResult {
    Attempt outcome;
    Token token;             // kAcquired, kReacquired
    TimestampTz expires_at;  // kTaken
    TransactionId locker;    // kBusy: who holds the row, when known
};

bool Granted(const AttemptResult &r) {
    return r.outcome == Attempt::kAcquired || r.outcome == Attempt::kReacquired;
}

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

bool LockForRaise(const LOCKTAG *tag, const char *name_space, const char *resource,
                  Token ended_token, int64 wait_us);
bool LockWithin(const LOCKTAG *tag, LOCKMODE mode, int64 wait_us);
void UnlockWithin(const LOCKTAG *tag, LOCKMODE mode);

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
        auto locker = static_cast<TransactionId>(DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull)));
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
    bool claimed = ClaimLeaseRow(name_space, resource, holder, ttl, wait_us, &last, &mine, &refused);
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

// fencing_acquire's and fencing_acquire_all's common arguments.
struct LeaseRequest {
    char *name_space;
    char *holder;
    const Interval *ttl;
    bool waits;     // wait => given
    int64 wait_us;  // how long, when waits
};

// The arguments after the resource(s); the namespace is read first.
void ReadLeaseRequest(FunctionCallInfo fcinfo, LeaseRequest *req) {
    req->holder = TextArg(fcinfo, 1, "holder");
    req->ttl = PositiveInterval(fcinfo, 2, "ttl");
    req->waits = !PG_ARGISNULL(3);
    req->wait_us = req->waits ? IntervalMicros(PG_GETARG_INTERVAL_P(3)) : 0;
    if (req->waits && req->wait_us < 0)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("wait must not be negative")));
}

// The rights fencing_acquire asks for; on_subscriber names what a subscriber
// refuses (nullptr: a read, allowed there).
void RequireAcquireRights(const char *name_space, const char *on_subscriber, const char *action) {
    Oid caller = GetUserId();
    if (on_subscriber != nullptr)
        RefuseLeaseOnSubscriber(on_subscriber);
    InternalSession session;
    BeginInternal(&session);
    RequireNamespaceWriter(name_space, caller, action);
    EndInternal(&session);
}

// fencing_check reads: the namespace owner's privileges, as for the other
// reads of a namespace's state; an unclaimed namespace holds no state and is
// left unclaimed (a check claims nothing), and anyone may check it.
void RequireCheckRights(const char *name_space) {
    Oid caller = GetUserId();
    InternalSession session;
    BeginInternal(&session);
    if (OidIsValid(NamespaceOwner(name_space)))
        RequireNamespaceOwner(name_space, caller, "check leases in it");
    EndInternal(&session);
}

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

void UnlockWithin(const LOCKTAG *tag, LOCKMODE mode) {
    ResourceOwner owner = CurrentResourceOwner;
    CurrentResourceOwner = CurTransactionResourceOwner;
    LockRelease(tag, mode, false);
    CurrentResourceOwner = owner;
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

// Takes the resource's wait queue lock (ExclusiveLock on its tag), queueing
// behind earlier waiters in the lock manager's arrival order, for at most
// wait_us. False when the wait ran out first.
bool JoinWaitQueue(const LOCKTAG *tag, int64 wait_us) {
    return LockWithin(tag, ExclusiveLock, wait_us);
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

// Renew and release: one conditional UPDATE of the live lease of token.
Datum ChangeLease(FunctionCallInfo fcinfo, bool renew) {
    char *name_space = NamespaceArg(fcinfo, renew ? 3 : 2);
    char *resource = TextArg(fcinfo, 0, "resource");
    Token token = TokenArg(fcinfo, 1);
    const Interval *ttl = renew ? PositiveInterval(fcinfo, 2, "ttl") : nullptr;
    Oid caller = GetUserId();
    RefuseLeaseOnSubscriber(renew ? "renew a lease" : "release a lease");
    bool had_xid = GetTopTransactionIdIfAny() != InvalidTransactionId;
    XLogRecPtr before = XactLastRecEnd;
    InternalSession session;
    BeginInternal(&session);
    RequireNamespaceOwner(name_space, caller,
                          renew ? "renew leases in it" : "release leases in it");
    Datum values[] = {CStringGetTextDatum(name_space), CStringGetTextDatum(resource),
                      Int64GetDatum(token), PointerGetDatum(ttl)};
    uint64 changed = RunInternalStatement(renew ? &lease_renew : &lease_release, values, nullptr);
    int64 held_us = 0;
    if (changed > 0 && !renew) {
        bool isnull;
        TimestampTz acquired_at = DatumGetTimestampTz(
            SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
        held_us = GetCurrentTimestamp() - acquired_at;
    }
    if (changed > 0 && renew)
        NoteLeaseExtended();
    else if (changed > 0)
        NoteLeaseChange(had_xid, before);
    // A refused renew or release from a holder that lost its lease without
    // knowing: only looked up when counting.
    bool lost =
        changed == 0 && StatsEnabled() && RunInternalStatement(&lease_lost, values, nullptr) > 0;
    EndInternal(&session);
    if (changed > 0) {
        WakeWaitersAtCommit(name_space, resource);
        CountLeaseEvent(name_space, resource, renew ? LeaseEvent::kRenewed : LeaseEvent::kReleased,
                        held_us);
    } else if (lost) {
        CountLeaseEvent(name_space, resource, LeaseEvent::kExpiryDetected, 0);
    }
    PG_RETURN_BOOL(changed > 0);
}

// fencing_acquire_all's resources, sorted (the order every caller locks them
// in) and checked: no NULL, no duplicate.
struct ResourceSet {
    int count;
    char **sorted;
    int *input_index;  // sorted[i] is resources[input_index[i]]
};

int CompareNames(const void *a, const void *b) {
    return strcmp(*static_cast<char *const *>(a), *static_cast<char *const *>(b));
}

void ReadResourceSet(FunctionCallInfo fcinfo, const char *name_space, ResourceSet *set) {
    if (PG_ARGISNULL(0))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("resources must not be NULL")));
    ArrayType *array = PG_GETARG_ARRAYTYPE_P(0);
    if (ARR_NDIM(array) > 1)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("resources must be a one-dimensional array")));
    Datum *elems;
    bool *nulls;
    int n;
    deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
    // Pairs (name, input index), sorted by name with the index after it.
    auto **pairs = static_cast<char **>(palloc(sizeof(char *) * Max(n, 1)));
    for (int i = 0; i < n; ++i) {
        if (nulls[i])
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("resources must not contain NULL")));
        char *name = TextDatumGetCString(elems[i]);
        RequireStorableResourceKey(name_space, name);
        pairs[i] = psprintf("%s%c%d", name, '\0', i);
    }
    qsort(pairs, n, sizeof(char *), CompareNames);
    set->count = n;
    set->sorted = pairs;
    set->input_index = static_cast<int *>(palloc(sizeof(int) * Max(n, 1)));
    for (int i = 0; i < n; ++i) {
        if (i > 0 && strcmp(pairs[i - 1], pairs[i]) == 0)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("resource %s appears more than once in resources",
                                   quote_literal_cstr(pairs[i])),
                            errhint("Pass each resource once.")));
        set->input_index[i] = atoi(pairs[i] + strlen(pairs[i]) + 1);
    }
}

// One attempt at every resource, in sorted order, in a subtransaction that
// is kept only when all were granted (tokens[input index]); else rolled back,
// with the refusal and the index (sorted) of the resource that refused.
bool TryAcquireAll(const LeaseRequest &req, const ResourceSet &set, int64 left_us, Datum *tokens,
                   AttemptResult *refused, int *refusing) {
    MemoryContext context = CurrentMemoryContext;
    ResourceOwner owner = CurrentResourceOwner;
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(context);
    bool all = true;
    PG_TRY();
    {
        for (int i = 0; i < set.count && all; ++i) {
            AttemptResult r =
                TryAcquire(req.name_space, set.sorted[i], req.holder, req.ttl, left_us);
            if (Granted(r)) {
                tokens[set.input_index[i]] = Int64GetDatum(r.token);
                continue;
            }
            all = false;
            *refused = r;
            *refusing = i;
        }
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(context);
        ErrorData *error = CopyErrorData();
        FlushErrorState();
        EndSubTransaction(false, context, owner);
        ReThrowError(error);
    }
    PG_END_TRY();
    EndSubTransaction(all, context, owner);
    return all;
}

// Waits, in the refusing resource's queue, until its lease may be free or
// the wait ends; then every resource is tried again. No row lock is held
// while waiting, so two callers with overlapping sets cannot deadlock.
void WaitForRefusing(const LeaseRequest &req, const char *resource, const AttemptResult &r,
                     int64 left_us) {
    LOCKTAG tag;
    LeaseLockTag(&tag, req.name_space, resource);
    if (!JoinWaitQueue(&tag, left_us))
        return;
    SleepForLease(r, left_us);
    UnlockWithin(&tag, ExclusiveLock);
}

Datum TokenArray(FunctionCallInfo fcinfo, Datum *tokens, int n) {
    Oid array_type = get_fn_expr_rettype(fcinfo->flinfo);
    Oid element = get_element_type(array_type);
    if (!OidIsValid(element))
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("fencing_acquire_all must return an array")));
    int16 len;
    bool byval;
    char align;
    get_typlenbyvalalign(element, &len, &byval, &align);
    PG_RETURN_ARRAYTYPE_P(construct_array(tokens, n, element, len, byval, align));
}

Datum AcquireAll(FunctionCallInfo fcinfo, const LeaseRequest &req, const ResourceSet &set) {
    instr_time started;
    INSTR_TIME_SET_CURRENT(started);
    auto *tokens = static_cast<Datum *>(palloc0(sizeof(Datum) * Max(set.count, 1)));
    for (;;) {
        ResetLatch(MyLatch);
        AttemptResult refused = {Attempt::kRetry, 0, 0, InvalidTransactionId};
        int refusing = 0;
        int64 left_us = req.wait_us - MicrosSince(started);
        if (TryAcquireAll(req, set, left_us, tokens, &refused, &refusing)) {
            int64 waited_us = MicrosSince(started);
            for (int i = 0; i < set.count; ++i)
                CountAcquire(req.name_space, set.sorted[i], true, waited_us > 0 && req.waits,
                             waited_us, DatumGetInt64(tokens[set.input_index[i]]));
            return TokenArray(fcinfo, tokens, set.count);
        }
        left_us = req.wait_us - MicrosSince(started);
        if (!req.waits || left_us <= 0) {
            CountAcquire(req.name_space, set.sorted[refusing], false, true, MicrosSince(started),
                         0);
            PG_RETURN_NULL();
        }
        WaitForRefusing(req, set.sorted[refusing], refused, left_us);
    }
}

// fencing_check: whether token is still the resource's current one.
bool TokenIsCurrent(const char *name_space, const char *resource, Token token) {
    Datum values[] = {CStringGetTextDatum(name_space), CStringGetTextDatum(resource)};
    InternalSession session;
    BeginInternal(&session);
    bool current = true;
    Token hwm = 0;
    bool at_floor = false;
    if (ReadResourceHwm(name_space, resource, &hwm, &at_floor) && hwm > token)
        current = false;  // a higher token was accepted
    // A resource judged by its namespace's floor had its entry (and its
    // lease, which had ended) retired into it: a token equal to the floor may
    // be that ended lease's, so only a token above the floor is current.
    if (at_floor && hwm > 0 && token <= hwm)
        current = false;
    if (current && RunInternalStatement(&lease_current, values, nullptr) > 0) {
        bool isnull;
        HeapTuple tup = SPI_tuptable->vals[0];
        TupleDesc desc = SPI_tuptable->tupdesc;
        Token issued = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
        bool live = DatumGetBool(SPI_getbinval(tup, desc, 2, &isnull));
        // A higher token was issued; or token is the lease's own and that
        // lease has ended (released or expired).
        if (issued > token || (issued == token && !live))
            current = false;
    }
    EndInternal(&session);
    return current;
}

}  // namespace

void RegisterLeaseCallbacks() {
    RegisterXactCallback(OnLeaseXactEvent, nullptr);
}

}  // namespace fencing::pg

using namespace fencing::pg;

FENCING_FUNCTION(fencing_acquire) {
    LeaseRequest req;
    req.name_space = NamespaceArg(fcinfo, 4);
    char *resource = TextArg(fcinfo, 0, "resource");
    RequireStorableResourceKey(req.name_space, resource);
    ReadLeaseRequest(fcinfo, &req);
    RequireAcquireRights(req.name_space, "acquire a lease", "acquire leases in it");
    return AcquireOne(fcinfo, req, resource);
}

FENCING_FUNCTION(fencing_acquire_all) {
    LeaseRequest req;
    req.name_space = NamespaceArg(fcinfo, 4);
    ResourceSet set;
    ReadResourceSet(fcinfo, req.name_space, &set);
    ReadLeaseRequest(fcinfo, &req);
    RequireAcquireRights(req.name_space, "acquire a lease", "acquire leases in it");
    return AcquireAll(fcinfo, req, set);
}

FENCING_FUNCTION(fencing_check) {
    char *name_space = NamespaceArg(fcinfo, 2);
    char *resource = TextArg(fcinfo, 0, "resource");
    fencing::Token token = TokenArg(fcinfo, 1);
    RequireCheckRights(name_space);
    PG_RETURN_BOOL(TokenIsCurrent(name_space, resource, token));
}

FENCING_FUNCTION(fencing_renew) {
    return ChangeLease(fcinfo, true);
}
FENCING_FUNCTION(fencing_release) {
    return ChangeLease(fcinfo, false);
}
