// fencing_acquire / fencing_renew / fencing_release: see pg/api/leases.hpp.
#include "pg/api/leases.hpp"

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
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/sinvaladt.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
}

namespace fencing::pg {
namespace {

// objsubid of the advisory lock tags lease waiters hold ('DE'); user advisory
// locks use 1 and 2.
constexpr uint16 kLeaseLockField4 = 0x4445;

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

void WakeWaiters(XactEvent event, void *) {
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT) {
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
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
        event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
        event == XACT_EVENT_PREPARE)
        pending_wakeups = NIL;
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

// The lease statements, prepared once per backend (pg/base/internal_access.hpp).
InternalStatement lease_lock = {
    "SELECT token, expires_at, released_at IS NULL"
    "       AND expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()"
    "  FROM fencing.lease"
    " WHERE namespace OPERATOR(pg_catalog.=) $1 AND resource OPERATOR(pg_catalog.=) $2"
    "   FOR UPDATE",
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
    " WHERE namespace OPERATOR(pg_catalog.=) $1 AND resource OPERATOR(pg_catalog.=) $2",
    5,
    {TEXTOID, TEXTOID, TEXTOID, INT8OID, INTERVALOID},
    nullptr};
InternalStatement lease_renew = {
    "UPDATE fencing.lease"
    "   SET expires_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $4"
    " WHERE namespace OPERATOR(pg_catalog.=) $1 AND resource OPERATOR(pg_catalog.=) $2"
    "   AND token OPERATOR(pg_catalog.=) $3 AND released_at IS NULL"
    "   AND expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()",
    4,
    {TEXTOID, TEXTOID, INT8OID, INTERVALOID},
    nullptr};
InternalStatement lease_release = {
    "UPDATE fencing.lease SET released_at = pg_catalog.clock_timestamp()"
    " WHERE namespace OPERATOR(pg_catalog.=) $1 AND resource OPERATOR(pg_catalog.=) $2"
    "   AND token OPERATOR(pg_catalog.=) $3 AND released_at IS NULL"
    "   AND expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()"
    " RETURNING acquired_at",
    3,
    {TEXTOID, TEXTOID, INT8OID},
    nullptr};
// After a refused renew or release (counters only): whether the token's
// lease ran out under its holder, i.e. a later token was issued, or the
// token's own lease expired without being released.
InternalStatement lease_lost = {
    "SELECT 1 FROM fencing.lease"
    " WHERE namespace OPERATOR(pg_catalog.=) $1 AND resource OPERATOR(pg_catalog.=) $2"
    "   AND (token OPERATOR(pg_catalog.>) $3"
    "        OR (token OPERATOR(pg_catalog.=) $3 AND released_at IS NULL))",
    3,
    {TEXTOID, TEXTOID, INT8OID},
    nullptr};

enum class Attempt { kAcquired, kTaken, kRetry };

struct AttemptResult {
    Attempt outcome;
    Token token;             // kAcquired
    TimestampTz expires_at;  // kTaken
};

// Locks the resource's lease row, inserting the first one. False, with why
// in *refused, when the lease is live (kTaken) or a concurrent first acquire
// won the insert (kRetry); else *last is the last token issued (0: none).
bool LockLeaseRow(const char *name_space, const char *resource, const char *holder,
                  const Interval *ttl, Token *last, AttemptResult *refused) {
    Datum ns = CStringGetTextDatum(name_space);
    Datum res = CStringGetTextDatum(resource);
    InternalSession session;
    BeginInternal(&session);
    Datum key[] = {ns, res};
    bool found = RunInternalStatement(&lease_lock, key, nullptr) > 0;
    bool available;
    if (found) {
        bool isnull;
        HeapTuple tup = SPI_tuptable->vals[0];
        TupleDesc desc = SPI_tuptable->tupdesc;
        *last = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
        TimestampTz expires_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 2, &isnull));
        available = !DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull));
        *refused = {Attempt::kTaken, 0, expires_at};
    } else {
        // The first lease of this resource: the inserted row (or the unique
        // index entry of a concurrent first acquire) serializes acquirers.
        Datum values[] = {ns, res, CStringGetTextDatum(holder), PointerGetDatum(ttl)};
        available = RunInternalStatement(&lease_first, values, nullptr) > 0;
        *refused = {Attempt::kRetry, 0, 0};  // a concurrent first acquire committed
    }
    EndInternal(&session);
    return available;
}

// Fence: raise the resource's HWM to a token above both the last one issued
// and the HWM (a token from elsewhere may have been written). Returns it.
Token RaiseAboveHwm(const char *name_space, const char *resource, Token last) {
    Token token = NextToken(last, name_space, resource);
    for (int i = 0;; ++i) {
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

void GrantLease(const char *name_space, const char *resource, const char *holder, Token token,
                const Interval *ttl) {
    InternalSession session;
    BeginInternal(&session);
    Datum values[] = {CStringGetTextDatum(name_space), CStringGetTextDatum(resource),
                      CStringGetTextDatum(holder), Int64GetDatum(token), PointerGetDatum(ttl)};
    RunInternalStatement(&lease_grant, values, nullptr);
    EndInternal(&session);
}

// One attempt, in the caller's (sub)transaction.
AttemptResult TryAcquire(const char *name_space, const char *resource, const char *holder,
                         const Interval *ttl) {
    Token last = 0;
    AttemptResult refused;
    if (!LockLeaseRow(name_space, resource, holder, ttl, &last, &refused))
        return refused;
    Token token = RaiseAboveHwm(name_space, resource, last);
    GrantLease(name_space, resource, holder, token, ttl);
    // Issuing a token must survive any crash or failover, whatever
    // synchronous_commit says (the HWM raise already asked for it too).
    NoteHwmRaised();
    return {Attempt::kAcquired, token, 0};
}

// TryAcquire in a subtransaction: kept when it acquired, rolled back (with
// its row lock) otherwise.
AttemptResult TryAcquireInSubtransaction(const char *name_space, const char *resource,
                                         const char *holder, const Interval *ttl) {
    MemoryContext context = CurrentMemoryContext;
    ResourceOwner owner = CurrentResourceOwner;
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(context);
    AttemptResult result = {Attempt::kRetry, 0, 0};
    // An error rolls the subtransaction back here and is raised again in the
    // caller's transaction (as PL/pgSQL's exception blocks do); otherwise the
    // session would be left inside an aborted subtransaction.
    PG_TRY();
    { result = TryAcquire(name_space, resource, holder, ttl); }
    PG_CATCH();
    {
        MemoryContextSwitchTo(context);
        ErrorData *error = CopyErrorData();
        FlushErrorState();
        RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(context);
        CurrentResourceOwner = owner;
        ReThrowError(error);
    }
    PG_END_TRY();
    if (result.outcome == Attempt::kAcquired)
        ReleaseCurrentSubTransaction();
    else
        RollbackAndReleaseCurrentSubTransaction();
    MemoryContextSwitchTo(context);
    CurrentResourceOwner = owner;
    return result;
}

// fencing_acquire's arguments.
struct LeaseRequest {
    char *name_space;
    char *resource;
    char *holder;
    const Interval *ttl;
    bool waits;     // wait => given
    int64 wait_us;  // how long, when waits
};

void ReadLeaseRequest(FunctionCallInfo fcinfo, LeaseRequest *req) {
    req->name_space = NamespaceArg(fcinfo, 4);
    req->resource = TextArg(fcinfo, 0, "resource");
    RequireStorableResourceKey(req->name_space, req->resource);
    req->holder = TextArg(fcinfo, 1, "holder");
    req->ttl = PositiveInterval(fcinfo, 2, "ttl");
    req->waits = !PG_ARGISNULL(3);
    req->wait_us = req->waits ? IntervalMicros(PG_GETARG_INTERVAL_P(3)) : 0;
    if (req->waits && req->wait_us < 0)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("wait must not be negative")));
}

int64 MicrosSince(instr_time started) {
    instr_time now;
    INSTR_TIME_SET_CURRENT(now);
    INSTR_TIME_SUBTRACT(now, started);
    return static_cast<int64>(INSTR_TIME_GET_MICROSEC(now));
}

// Sleeps until the live lease expires or the wait ends (left_us from now),
// whichever is first, or until a release or renew of it wakes this backend.
void SleepForLease(TimestampTz expires_at, int64 left_us) {
    int64 until_expiry_us = expires_at - GetCurrentTimestamp();
    int64 sleep_us = Min(left_us, Max(until_expiry_us, 0));
    // Whole milliseconds, rounded up, at least 1, at most a day at a time.
    long sleep_ms = static_cast<long>(Min((sleep_us + 999) / 1000, int64{86400000}));
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, Max(sleep_ms, 1L),
                    PG_WAIT_EXTENSION);
    CHECK_FOR_INTERRUPTS();
}

// Renew and release: one conditional UPDATE of the live lease of token.
Datum ChangeLease(FunctionCallInfo fcinfo, bool renew) {
    char *name_space = NamespaceArg(fcinfo, renew ? 3 : 2);
    char *resource = TextArg(fcinfo, 0, "resource");
    Token token = TokenArg(fcinfo, 1);
    const Interval *ttl = renew ? PositiveInterval(fcinfo, 2, "ttl") : nullptr;
    Oid caller = GetUserId();
    RefuseLeaseOnSubscriber(renew ? "renew a lease" : "release a lease");
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

}  // namespace

void RegisterLeaseCallbacks() {
    RegisterXactCallback(WakeWaiters, nullptr);
}

}  // namespace fencing::pg

using namespace fencing::pg;

FENCING_FUNCTION(fencing_acquire) {
    LeaseRequest req;
    ReadLeaseRequest(fcinfo, &req);
    Oid caller = GetUserId();
    RefuseLeaseOnSubscriber("acquire a lease");

    InternalSession session;
    BeginInternal(&session);
    RequireNamespaceWriter(req.name_space, caller, "acquire leases in it");
    EndInternal(&session);

    // The wait is measured on the monotonic clock; lease expiry on the
    // server's wall clock (clock_timestamp()), as stored.
    instr_time started;
    INSTR_TIME_SET_CURRENT(started);
    // Contended: another lease was live at least once (NULL returned, or waited).
    bool contended = false;
    LOCKTAG tag;
    if (req.waits) {
        LeaseLockTag(&tag, req.name_space, req.resource);
        LockAcquire(&tag, ShareLock, false, false);
    }
    for (int retries = 0;;) {
        ResetLatch(MyLatch);
        AttemptResult r =
            TryAcquireInSubtransaction(req.name_space, req.resource, req.holder, req.ttl);
        if (r.outcome == Attempt::kRetry) {
            if (++retries > 8)
                ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                                errmsg("could not acquire the lease of resource %s under "
                                       "concurrent first acquires",
                                       quote_literal_cstr(req.resource)),
                                errhint("Retry the transaction.")));
            continue;
        }
        int64 waited_us = MicrosSince(started);
        if (r.outcome == Attempt::kAcquired) {
            if (req.waits)
                LockRelease(&tag, ShareLock, false);
            CountAcquire(req.name_space, req.resource, true, contended, waited_us, r.token);
            PG_RETURN_INT64(r.token);
        }
        contended = true;
        int64 left_us = req.wait_us - waited_us;
        if (!req.waits || left_us <= 0) {
            if (req.waits)
                LockRelease(&tag, ShareLock, false);
            CountAcquire(req.name_space, req.resource, false, true, waited_us, 0);
            PG_RETURN_NULL();
        }
        SleepForLease(r.expires_at, left_us);
    }
}

FENCING_FUNCTION(fencing_renew) {
    return ChangeLease(fcinfo, true);
}
FENCING_FUNCTION(fencing_release) {
    return ChangeLease(fcinfo, false);
}
