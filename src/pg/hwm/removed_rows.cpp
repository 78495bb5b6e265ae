// Removed rows' HWMs, set-based or folded into the table's floor (see
// removed_rows.hpp), and the deferral of a DELETE's tombstones to the end of
// its executor run.
#include "pg/hwm/removed_rows.hpp"

#include "pg/hwm/durability.hpp"
#include "pg/hwm/lock.hpp"
#include "pg/hwm/raise_paths.hpp"
#include "pg/hwm/store.hpp"
#include "pg/hwm/store_shape.hpp"
#include "pg/base/compat.hpp"
#include "pg/base/internal_access.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/memutils.h"
}

namespace fencing::pg {
namespace {

// One statement per key width (a one-column key unnests directly) and per
// row_tombstone shape (raised_at since 1.5). Duplicate keys in one batch are
// grouped: ON CONFLICT DO UPDATE may touch a row once per statement.
#define REMOVED_INSERT "INSERT INTO fencing.row_tombstone AS t (relid, key, hwm) "
#define REMOVED_ONE_COLUMN                                                    \
    "SELECT $1, ARRAY[s.k], pg_catalog.max(s.h)"                              \
    "  FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3)) s(k, h)" \
    " GROUP BY s.k"
#define REMOVED_COLUMNS                                                        \
    "SELECT $1, s.k, pg_catalog.max(s.h) FROM"                                 \
    " (SELECT $2[g OPERATOR(pg_catalog.*) $4 OPERATOR(pg_catalog.+) 1 :"       \
    "            g OPERATOR(pg_catalog.*) $4 OPERATOR(pg_catalog.+) $4] AS k," \
    "         $3[g OPERATOR(pg_catalog.+) 1] AS h"                             \
    "    FROM pg_catalog.generate_series(0, pg_catalog.cardinality($3)"        \
    "                                       OPERATOR(pg_catalog.-) 1) g) s"    \
    " GROUP BY s.k"
#define REMOVED_CONFLICT " ON CONFLICT (relid, key) DO UPDATE SET hwm = excluded.hwm"
#define REMOVED_STAMP ", raised_at = pg_catalog.now()"
#define REMOVED_HIGHER " WHERE t.hwm OPERATOR(pg_catalog.<) excluded.hwm"

// [one column][stamped]
#define REMOVED_ARGS 4, {OIDOID, TEXTARRAYOID, INT8ARRAYOID, INT4OID}, nullptr
InternalStatement removed_statements[2][2] = {
    {{REMOVED_INSERT REMOVED_COLUMNS REMOVED_CONFLICT REMOVED_HIGHER, REMOVED_ARGS},
     {REMOVED_INSERT REMOVED_COLUMNS REMOVED_CONFLICT REMOVED_STAMP REMOVED_HIGHER, REMOVED_ARGS}},
    {{REMOVED_INSERT REMOVED_ONE_COLUMN REMOVED_CONFLICT REMOVED_HIGHER, REMOVED_ARGS},
     {REMOVED_INSERT REMOVED_ONE_COLUMN REMOVED_CONFLICT REMOVED_STAMP REMOVED_HIGHER,
      REMOVED_ARGS}}};

// The buffered keys as tombstones, in one statement; the buffer emptied.
void WriteBuffered(RemovedRows *r) {
    if (r->buffered == 0)
        return;
    ArrayType *elems =
        construct_array(r->elems, r->buffered * r->natts, TEXTOID, -1, false, TYPALIGN_INT);
    ArrayType *tokens =
        construct_array(r->tokens, r->buffered, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, 'd');
    Datum values[] = {ObjectIdGetDatum(r->home_relid), PointerGetDatum(elems),
                      PointerGetDatum(tokens), Int32GetDatum(r->natts)};
    bool stamped = StoreHasRaisedAt("row_tombstone");
    InternalStatement *stmt = &removed_statements[r->natts == 1][stamped];
    InternalSession access;
    BeginInternal(&access);
    if (RunInternalStatement(stmt, values, nullptr) > 0 || hwm::ReplicaTriggerMayWrite())
        NoteHwmRaised();
    EndInternal(&access);
    r->buffered = 0;
    MemoryContextReset(r->batch);
}

// Whether the table's retirement is enabled: its floor row read, then locked
// until this transaction ends, then the floor lock taken exclusively (no
// transaction keeps a floor it read before the fold, and none starts keeping
// one before this transaction ends). Neither is waited for: a retirement
// takes the row first and then waits for the floor lock, so waiting for the
// row here while holding the floor lock would deadlock with it. Not granted:
// exact tombstones.
// Under REPEATABLE READ or SERIALIZABLE a floor row raised after the snapshot
// could only be locked with 40001: such a removal leaves exact tombstones.
bool MayFold(Oid home_relid) {
    if (IsolationUsesXactSnapshot() || !OidIsValid(hwm::StoreRelid("tombstone_floor")))
        return false;
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(home_relid)};
    InternalSession access;
    BeginInternal(&access);
    bool enabled = false;
    const char *read =
        "SELECT enabled FROM fencing.tombstone_floor"
        " WHERE relid OPERATOR(pg_catalog.=) $1";
    for (int pass = 0; pass < 2; ++pass) {
        RunInternalSql(pass == 0 ? read : psprintf("%s FOR NO KEY UPDATE SKIP LOCKED", read), 1,
                       types, values, nullptr, pass == 0);
        bool isnull = true;
        enabled =
            SPI_processed > 0 &&
            DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) &&
            !isnull;
        if (!enabled)
            break;
    }
    if (enabled)
        enabled = LockTombstoneFloorExclusive(home_relid, true);
    EndInternal(&access);
    return enabled;
}

// Raises the table's floor to highest (never lowers it), durably.
void Fold(Oid home_relid, Token highest) {
    ForgetTombstoneFloor();
    Oid types[] = {OIDOID, INT8OID};
    Datum values[] = {ObjectIdGetDatum(home_relid), Int64GetDatum(highest)};
    InternalSession access;
    BeginInternal(&access);
    RunInternalSql(
        "UPDATE fencing.tombstone_floor SET floor = GREATEST(floor, $2)"
        " WHERE relid OPERATOR(pg_catalog.=) $1",
        2, types, values, nullptr, false);
    EndInternal(&access);
    NoteHwmRaised();
}

}  // namespace

void BeginRemovedRows(RemovedRows *r, Oid home_relid, MemoryContext parent) {
    *r = RemovedRows{};
    r->home_relid = home_relid;
    r->context = AllocSetContextCreate(parent, "fencing removed rows", ALLOCSET_SMALL_SIZES);
    r->batch = AllocSetContextCreate(r->context, "fencing removed keys", ALLOCSET_DEFAULT_SIZES);
}

void AddRemovedRow(RemovedRows *r, Datum key, Token token) {
    if (r->buffered == kRemovedBatch) {
        if (!r->fold_tried && r->rows >= kFoldThreshold) {
            r->fold_tried = true;
            r->folding = MayFold(r->home_relid);
        }
        if (r->folding) {
            r->buffered = 0;
            MemoryContextReset(r->batch);
        } else {
            WriteBuffered(r);
        }
    }
    ++r->rows;
    if (token > r->highest)
        r->highest = token;
    if (r->folding)
        return;
    MemoryContext old = MemoryContextSwitchTo(r->batch);
    Datum *elems;
    int n;
    deconstruct_array(DatumGetArrayTypeP(key), TEXTOID, -1, false, TYPALIGN_INT, &elems, nullptr,
                      &n);
    if (r->natts == 0) {
        r->natts = n;
        r->elems = static_cast<Datum *>(
            MemoryContextAlloc(r->context, sizeof(Datum) * kRemovedBatch * (n > 0 ? n : 1)));
        r->tokens =
            static_cast<Datum *>(MemoryContextAlloc(r->context, sizeof(Datum) * kRemovedBatch));
    }
    // Every key of one table has its primary key's width.
    for (int i = 0; i < n && i < r->natts; ++i)
        r->elems[r->buffered * r->natts + i] = datumCopy(elems[i], false, -1);
    r->tokens[r->buffered] = Int64GetDatum(token);
    ++r->buffered;
    MemoryContextSwitchTo(old);
}

bool AddRemovedToken(RemovedRows *r, Token token) {
    if (!r->folding)
        return false;
    ++r->rows;
    if (token > r->highest)
        r->highest = token;
    return true;
}

int64 EndRemovedRows(RemovedRows *r) {
    if (r->folding)
        Fold(r->home_relid, r->highest);
    else
        WriteBuffered(r);
    MemoryContextDelete(r->context);
    r->context = nullptr;
    return r->rows;
}

namespace {

// A DELETE's deferred tombstones: one set per table, executor run depth and
// subtransaction, written when that run ends (or before this backend reads
// the table's tombstones, or at commit), dropped when the subtransaction
// aborts.
struct Deferred {
    Oid home_relid;
    int depth;
    SubTransactionId subid;
    RemovedRows rows;
};

List *deferred = NIL;  // of Deferred *, in TopTransactionContext
// Executor runs in progress, and queries started and not yet ended, under
// these hooks. A statement that loads the library (its first trigger call)
// started before the hooks: its rows are deferred at depth 0 and written at
// its ExecutorFinish, the first with no query open under the hooks.
int run_depth = 0;
int open_queries = 0;
// Adding or writing a set: the SQL it runs ends executor runs of its own,
// which must not write the set under it.
bool busy = false;
ExecutorStart_hook_type previous_executor_start = nullptr;
ExecutorRun_hook_type previous_executor_run = nullptr;
ExecutorFinish_hook_type previous_executor_finish = nullptr;
ExecutorEnd_hook_type previous_executor_end = nullptr;

// Writes (and forgets) the deferred sets that match.
template <typename Match>
void WriteDeferredWhere(Match match) {
    if (busy)
        return;
    while (deferred != NIL) {
        Deferred *d = nullptr;
        ListCell *lc;
        foreach (lc, deferred) {
            auto *candidate = static_cast<Deferred *>(lfirst(lc));
            if (match(candidate)) {
                d = candidate;
                break;
            }
        }
        if (d == nullptr)
            return;
        // Out of the list first: the write runs SQL, whose own executor runs
        // end here too.
        deferred = list_delete_ptr(deferred, d);
        busy = true;
        EndRemovedRows(&d->rows);
        busy = false;
        pfree(d);
    }
}

void DropDeferredOf(SubTransactionId subid) {
    List *kept = NIL;
    ListCell *lc;
    foreach (lc, deferred) {
        auto *d = static_cast<Deferred *>(lfirst(lc));
        if (d->subid == subid) {
            MemoryContextDelete(d->rows.context);
            pfree(d);
        } else {
            kept = lappend(kept, d);
        }
    }
    deferred = kept;
}

void RunThenWriteRemovals(FENCING_EXECUTOR_RUN_PARAMS(query, direction, count, once)) {
    ++run_depth;
    PG_TRY();
    {
        if (previous_executor_run != nullptr)
            FENCING_CALL_EXECUTOR_RUN(previous_executor_run, query, direction, count, once);
        else
            FENCING_CALL_EXECUTOR_RUN(standard_ExecutorRun, query, direction, count, once);
    }
    PG_FINALLY();
    { --run_depth; }
    PG_END_TRY();
    // Before the statement's AFTER triggers (ExecutorFinish): they read what
    // the rows left.
    int depth = run_depth;
    if (deferred != NIL)
        WriteDeferredWhere([depth](const Deferred *d) { return d->depth > depth; });
}

void StartQuery(QueryDesc *query, int eflags) {
    if (previous_executor_start != nullptr)
        previous_executor_start(query, eflags);
    else
        standard_ExecutorStart(query, eflags);
    ++open_queries;
    // A statement that writes the table floors (an adoption's or a
    // transfer's merge, a policy carry): the floor this transaction kept is
    // stale.
    if (query->operation != CMD_SELECT && KeepsTombstoneFloor()) {
        Oid floors = hwm::StoreRelid("tombstone_floor");
        if (OidIsValid(floors) && WritesRelation(query->plannedstmt, floors))
            ForgetTombstoneFloor();
    }
}

void FinishQuery(QueryDesc *query) {
    if (deferred != NIL && open_queries == 0)
        WriteDeferredWhere([](const Deferred *d) { return d->depth == 0; });
    if (previous_executor_finish != nullptr)
        previous_executor_finish(query);
    else
        standard_ExecutorFinish(query);
}

void EndQuery(QueryDesc *query) {
    if (previous_executor_end != nullptr)
        previous_executor_end(query);
    else
        standard_ExecutorEnd(query);
    if (open_queries > 0)
        --open_queries;
}

void OnXactEvent(XactEvent event, void *) {
    if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PARALLEL_PRE_COMMIT ||
        event == XACT_EVENT_PRE_PREPARE) {
        WriteDeferredWhere([](const Deferred *) { return true; });
        return;
    }
    deferred = NIL;  // its memory went with TopTransactionContext
    run_depth = 0;
    open_queries = 0;
    busy = false;
}

void OnSubXactEvent(SubXactEvent event, SubTransactionId subid, SubTransactionId parent, void *) {
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        busy = false;  // an add or write it aborted
        DropDeferredOf(subid);
    } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
        ListCell *lc;
        foreach (lc, deferred) {
            auto *d = static_cast<Deferred *>(lfirst(lc));
            if (d->subid == subid)
                d->subid = parent;
        }
    }
}

}  // namespace

namespace {

// The deferred set of this table at this run depth and subtransaction.
Deferred *CurrentDeferred(Oid home_relid) {
    SubTransactionId subid = GetCurrentSubTransactionId();
    ListCell *lc;
    foreach (lc, deferred) {
        auto *d = static_cast<Deferred *>(lfirst(lc));
        if (d->home_relid == home_relid && d->depth == run_depth && d->subid == subid)
            return d;
    }
    return nullptr;
}

}  // namespace

bool DeferFoldedRow(Oid home_relid, Token token) {
    if (busy || deferred == NIL)
        return false;
    Deferred *d = CurrentDeferred(home_relid);
    return d != nullptr && AddRemovedToken(&d->rows, token);
}

bool DeferRemovedRow(Oid home_relid, Datum key, Token token) {
    // Between a query's run and its end under the hooks (an AFTER trigger's
    // work): no hook of ours writes the set soon, so written now. Outside any
    // query (a logical replication apply) the set waits for the commit.
    if (busy || (run_depth == 0 && open_queries > 0))
        return false;
    Deferred *d = CurrentDeferred(home_relid);
    if (d == nullptr) {
        d = static_cast<Deferred *>(
            MemoryContextAllocZero(TopTransactionContext, sizeof(Deferred)));
        d->home_relid = home_relid;
        d->depth = run_depth;
        d->subid = GetCurrentSubTransactionId();
        BeginRemovedRows(&d->rows, home_relid, TopTransactionContext);
        MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
        deferred = lappend(deferred, d);
        MemoryContextSwitchTo(old);
    }
    busy = true;
    AddRemovedRow(&d->rows, key, token);
    busy = false;
    return true;
}

void WriteDeferredRemovals(Oid home_relid) {
    if (deferred != NIL)
        WriteDeferredWhere([home_relid](const Deferred *d) { return d->home_relid == home_relid; });
}

void RegisterRemovedRowsCallbacks() {
    previous_executor_start = ExecutorStart_hook;
    ExecutorStart_hook = StartQuery;
    previous_executor_run = ExecutorRun_hook;
    ExecutorRun_hook = RunThenWriteRemovals;
    previous_executor_finish = ExecutorFinish_hook;
    ExecutorFinish_hook = FinishQuery;
    previous_executor_end = ExecutorEnd_hook;
    ExecutorEnd_hook = EndQuery;
    RegisterXactCallback(OnXactEvent, nullptr);
    RegisterSubXactCallback(OnSubXactEvent, nullptr);
}

}  // namespace fencing::pg
