// fencing_acquire, fencing_acquire_all, fencing_check, fencing_renew and
// fencing_release: see pg/api/leases.hpp. The acquire path is in
// pg/api/lease_acquire.cpp, the commit of lease changes in
// pg/api/lease_commit.cpp.
#include "pg/api/leases.hpp"

#include "pg/api/lease_acquire.hpp"
#include "pg/api/lease_commit.hpp"

#include "pg/base/boundary.hpp"
#include "pg/hwm/store.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/catalog/namespaces.hpp"
#include "pg/base/stats.hpp"
#include "pg/catalog/subscriber.hpp"
#include "pg/catalog/citus_node.hpp"
#include "pg/keys/resource_key.hpp"
#include "pg/api/hwm_args.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
}

namespace fencing::pg {
namespace {

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

// The renew, release and check statements, prepared once per backend
// (pg/base/internal_access.hpp).
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
// fencing_check: the last token issued and whether its lease is live.
InternalStatement lease_current = {"SELECT token, " LEASE_LIVE
                                   " FROM fencing.lease WHERE " LEASE_KEY,
                                   2,
                                   {TEXTOID, TEXTOID},
                                   nullptr};

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

// Renew and release: one conditional UPDATE of the live lease of token.
Datum ChangeLease(FunctionCallInfo fcinfo, bool renew) {
    char *name_space = NamespaceArg(fcinfo, renew ? 3 : 2);
    char *resource = TextArg(fcinfo, 0, "resource");
    Token token = TokenArg(fcinfo, 1);
    const Interval *ttl = renew ? PositiveInterval(fcinfo, 2, "ttl") : nullptr;
    Oid caller = GetUserId();
    RefuseLeaseOnSubscriber(renew ? "renew a lease" : "release a lease");
    RefuseOnCitus(fencing::CitusAction::kLease, InvalidOid, fencing::Scope::kRow);
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
    RefuseOnCitus(fencing::CitusAction::kLease, InvalidOid, fencing::Scope::kRow);
    RequireCheckRights(name_space);
    PG_RETURN_BOOL(TokenIsCurrent(name_space, resource, token));
}

FENCING_FUNCTION(fencing_renew) {
    return ChangeLease(fcinfo, true);
}
FENCING_FUNCTION(fencing_release) {
    return ChangeLease(fcinfo, false);
}
