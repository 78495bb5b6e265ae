// fenced_update(), fenced_delete(), fenced_upsert(): one atomic, fenced
// statement per call, for clients that prefer a function to SET LOCAL.
//
// The statement is ordinary SQL run with the caller's privileges and RLS. The
// guard trigger makes the decision, as for any other write, inside the fenced
// call scope (pg/guard/fenced_call.hpp): the call's token, and stale rows
// skipped, so a stale writer gets 0 rows. Plans are prepared once per (table,
// operation, column set), kept with SPI_keepplan, and forgotten when the
// table's relcache entry is invalidated (any DDL on it, or a policy change).
#include "pg/base/boundary.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/api/fenced_dml.hpp"
#include "pg/base/json_args.hpp"
#include "pg/guard/fenced_call.hpp"
#include "pg/guard/install.hpp"
#include "pg/keys/row_key.hpp"
#include "pg/catalog/citus_node.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/base/errors.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "catalog/pg_operator.h"
}

namespace fencing::pg {
namespace {

enum class DmlKind : char { kUpdate = 'u', kDelete = 'd', kUpsert = 'i' };

constexpr Size kCacheKeySize = 1024;

// Plans are dropped when their table's relcache entry is invalidated, and the
// cache holds at most this many, so dropped tables and one-off column sets
// cannot make it grow without bound.
constexpr long kMaxCachedPlans = 256;

struct PlanEntry {
    char key[kCacheKeySize];  // "relid op cols" (hash key)
    Oid relid;
    bool valid;
    int running;  // executions in progress (a trigger may call fenced_*() again)
    SPIPlanPtr plan;
    MemoryContext memory;  // the arrays below and the input functions' state
    int ncolumns;          // JSON-supplied parameters, in key order
    FmgrInfo *input;       // each column type's input function
    Oid *ioparam;
    int32 *typmod;
    bool *array_column;  // a JSON array is read as a PostgreSQL array
};

HTAB *plan_cache = nullptr;

void ReleaseEntry(PlanEntry *e) {
    if (e->plan != nullptr)
        SPI_freeplan(e->plan);
    e->plan = nullptr;
    if (e->memory != nullptr)
        MemoryContextDelete(e->memory);
    e->memory = nullptr;
}

// Frees every entry that is not running and is invalid (or, when the cache is
// full, every entry that is not running). Never called from an invalidation
// callback, which may fire while a plan executes.
void SweepPlans() {
    bool full = hash_get_num_entries(plan_cache) >= kMaxCachedPlans;
    HASH_SEQ_STATUS seq;
    hash_seq_init(&seq, plan_cache);
    for (auto *e = static_cast<PlanEntry *>(hash_seq_search(&seq)); e != nullptr;
         e = static_cast<PlanEntry *>(hash_seq_search(&seq))) {
        if (e->running > 0 || (e->valid && !full))
            continue;
        ReleaseEntry(e);
        hash_search(plan_cache, e->key, HASH_REMOVE, nullptr);
    }
}

struct Target {
    Oid relid;
    const char *qualified_name;
    AttrNumber token_attnum;
    const char *token_column;
    Oid token_type;
};

// The protected relation's token column, from its guard trigger (the table
// itself, or its first leaf partition). The coordinator's table of a Citus
// table (citus_routed) has no guard: its shards are protected by
// auto-protection, which takes its one fencing_token column.
void ResolveTarget(Oid relid, bool citus_routed, Target *t) {
    if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("relation with OID %u does not exist", relid)));
    t->relid = relid;
    t->qualified_name = RelName(relid);
    t->token_attnum = InvalidAttrNumber;
    List *guarded = GuardedRelations(relid, AccessShareLock);
    Policy policy;
    if (guarded != NIL && GuardPolicy(linitial_oid(guarded), &policy) &&
        policy.home_relid == relid) {
        // A leaf's token column has the same name as its partitioned table's.
        char *name = get_attname(linitial_oid(guarded), policy.token_attnum, false);
        t->token_attnum = get_attnum(relid, name);
        t->token_column = name;
    }
    char name[NAMEDATALEN];
    if (t->token_attnum == InvalidAttrNumber && citus_routed && TokenColumns(relid, name) == 1) {
        t->token_column = pstrdup(name);
        t->token_attnum = get_attnum(relid, name);
    }
    if (t->token_attnum == InvalidAttrNumber)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("table %s is not protected by fencing", t->qualified_name),
                        errhint("Declare a fencing_token column or call fencing_protect().")));
    t->token_type = get_atttype(relid, t->token_attnum);
}

struct ColumnRef {
    AttrNumber attnum;
    Oid type;
    int32 typmod;
    const char *quoted;
};

ColumnRef Column(const Target &t, const char *name, const char *argname) {
    AttrNumber attnum = get_attnum(t.relid, name);
    if (attnum == InvalidAttrNumber)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("column \"%s\" of relation %s does not exist (in %s)", name,
                               t.qualified_name, argname)));
    if (attnum < 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
                        errmsg("cannot use system column \"%s\" (in %s)", name, argname)));
    ColumnRef c;
    c.attnum = attnum;
    Oid collation;
    get_atttypetypmodcoll(t.relid, attnum, &c.type, &c.typmod, &collation);
    c.quoted = quote_identifier(name);
    return c;
}

// "OPERATOR(schema.=)" for the type's default equality, so the caller's
// search_path cannot substitute another operator.
const char *EqualityOperator(Oid type, const char *column) {
    TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_EQ_OPR);
    if (!OidIsValid(tc->eq_opr))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_FUNCTION),
                        errmsg("column \"%s\" of type %s has no equality operator and cannot be "
                               "used in a key",
                               column, format_type_be(type))));
    HeapTuple optup = SearchSysCache1(OPEROID, ObjectIdGetDatum(tc->eq_opr));
    if (!HeapTupleIsValid(optup))
        elog(ERROR, "cache lookup failed for operator %u", tc->eq_opr);
    auto *op = reinterpret_cast<Form_pg_operator>(GETSTRUCT(optup));
    char *result =
        psprintf("OPERATOR(%s.%s)", quote_identifier(get_namespace_name(op->oprnamespace)),
                 NameStr(op->oprname));
    ReleaseSysCache(optup);
    return result;
}

void RememberInput(PlanEntry *e, int index, const ColumnRef &c) {
    Oid input;
    getTypeInputInfo(c.type, &input, &e->ioparam[index]);
    fmgr_info_cxt(input, &e->input[index], e->memory);
    e->typmod[index] = c.typmod;
    e->array_column[index] = OidIsValid(get_element_type(getBaseType(c.type)));
}

// The entry's per-column input state, in its own memory context: one slot
// per parameter after the token.
void AllocateInputs(PlanEntry *e, int total) {
    e->memory =
        AllocSetContextCreate(TopMemoryContext, "fencing fenced DML plan", ALLOCSET_SMALL_SIZES);
    e->input =
        static_cast<FmgrInfo *>(MemoryContextAlloc(e->memory, sizeof(FmgrInfo) * (total + 1)));
    e->ioparam = static_cast<Oid *>(MemoryContextAlloc(e->memory, sizeof(Oid) * (total + 1)));
    e->typmod = static_cast<int32 *>(MemoryContextAlloc(e->memory, sizeof(int32) * (total + 1)));
    e->array_column =
        static_cast<bool *>(MemoryContextAlloc(e->memory, sizeof(bool) * (total + 1)));
}

// "a = $2 AND b = $3": the key columns, compared with their types' default
// equality.
void AppendKeyCondition(StringInfo sql, const ColumnRef *cols, const Members &key) {
    for (int i = 0; i < key.count; ++i)
        appendStringInfo(sql, "%s%s %s $%d", i > 0 ? " AND " : "", cols[i].quoted,
                         EqualityOperator(cols[i].type, key.names[i]), i + 2);
}

void AppendUpsert(StringInfo sql, const Target &t, const char *quoted_token, const ColumnRef *cols,
                  int n) {
    Relation rel = table_open(t.relid, AccessShareLock);
    PrimaryKey pk;
    bool has_pk = GetPrimaryKey(rel, &pk);
    TupleDesc desc = RelationGetDescr(rel);
    if (!has_pk) {
        table_close(rel, AccessShareLock);
        ereport(ERROR, (errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
                        errmsg("fenced_upsert() needs a primary key on %s", t.qualified_name)));
    }
    appendStringInfo(sql, "INSERT INTO %s AS target (%s", t.qualified_name, quoted_token);
    for (int i = 0; i < n; ++i) appendStringInfo(sql, ", %s", cols[i].quoted);
    appendStringInfoString(sql, ") VALUES ($1");
    for (int i = 0; i < n; ++i) appendStringInfo(sql, ", $%d", i + 2);
    appendStringInfoString(sql, ") ON CONFLICT (");
    for (int i = 0; i < pk.natts; ++i)
        appendStringInfo(
            sql, "%s%s", i > 0 ? ", " : "",
            quote_identifier(NameStr(TupleDescAttr(desc, pk.attnums[i] - 1)->attname)));
    appendStringInfo(sql, ") DO UPDATE SET %s = excluded.%s", quoted_token, quoted_token);
    for (int i = 0; i < n; ++i) {
        bool in_key = false;
        for (int k = 0; k < pk.natts; ++k) in_key |= pk.attnums[k] == cols[i].attnum;
        if (!in_key)
            appendStringInfo(sql, ", %s = excluded.%s", cols[i].quoted, cols[i].quoted);
    }
    table_close(rel, AccessShareLock);
}

// The statement's text. cols holds `first` (key or row), then `second`
// (changes); parameter $1 is the token, $i+2 is cols[i].
char *StatementText(DmlKind kind, const Target &t, const ColumnRef *cols, int n,
                    const Members &first) {
    StringInfoData sql;
    initStringInfo(&sql);
    const char *quoted_token = quote_identifier(t.token_column);
    switch (kind) {
        case DmlKind::kUpdate:
            appendStringInfo(&sql, "UPDATE %s SET %s = $1", t.qualified_name, quoted_token);
            for (int i = first.count; i < n; ++i)
                appendStringInfo(&sql, ", %s = $%d", cols[i].quoted, i + 2);
            appendStringInfoString(&sql, " WHERE ");
            AppendKeyCondition(&sql, cols, first);
            break;
        case DmlKind::kDelete:
            appendStringInfo(&sql, "DELETE FROM %s WHERE ", t.qualified_name);
            AppendKeyCondition(&sql, cols, first);
            break;
        case DmlKind::kUpsert:
            AppendUpsert(&sql, t, quoted_token, cols, n);
            break;
    }
    return sql.data;
}

// Builds and prepares the statement. Parameter $1 is the token; then one
// parameter per JSON member, first `first` (key or row), then `second` (changes).
void Prepare(PlanEntry *e, DmlKind kind, const Target &t, const Members &first,
             const Members &second) {
    int total = first.count + second.count;
    auto *argtypes = static_cast<Oid *>(palloc(sizeof(Oid) * (total + 1)));
    argtypes[0] = t.token_type;
    int n = 0;
    auto *cols = static_cast<ColumnRef *>(palloc(sizeof(ColumnRef) * (total + 1)));
    AllocateInputs(e, total);
    for (int i = 0; i < first.count; ++i)
        cols[n++] = Column(t, first.names[i], kind == DmlKind::kUpsert ? "row" : "key");
    for (int i = 0; i < second.count; ++i) cols[n++] = Column(t, second.names[i], "changes");
    for (int i = 0; i < n; ++i) {
        if (cols[i].attnum == t.token_attnum)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("the token column \"%s\" is written from the token argument",
                                   t.token_column),
                            errhint("Remove it from the JSON argument.")));
        argtypes[i + 1] = cols[i].type;
        RememberInput(e, i, cols[i]);
    }
    e->plan =
        PrepareKeptPlan(StatementText(kind, t, cols, n, first), n + 1, argtypes,
                        ERRCODE_SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION,
                        psprintf("could not prepare fenced statement on %s", t.qualified_name));
    e->ncolumns = n;
    e->valid = true;
}

// Builds a plan-cache key without printf: it runs on every call.
struct CacheKey {
    char *buf;
    Size len;
    bool fits;
    void Char(char c) {
        if (len + 1 < kCacheKeySize)
            buf[len++] = c;
        else
            fits = false;
    }
    void Number(uint64 n) {
        char digits[20];
        int d = 0;
        do {
            digits[d++] = static_cast<char>('0' + n % 10);
            n /= 10;
        } while (n != 0);
        while (d > 0) Char(digits[--d]);
        Char(' ');
    }
    void Name(const char *name) {
        Size n = strlen(name);
        Number(n);
        if (len + n + 1 >= kCacheKeySize) {
            fits = false;
            return;
        }
        memcpy(buf + len, name, n);
        len += n;
    }
    bool Finish() {
        buf[len < kCacheKeySize ? len : kCacheKeySize - 1] = '\0';
        return fits;
    }
};

PlanEntry *PlanFor(DmlKind kind, Oid relid, bool citus_routed, const Members &first,
                   const Members &second) {
    if (plan_cache == nullptr) {
        HASHCTL ctl;
        ctl.keysize = kCacheKeySize;
        ctl.entrysize = sizeof(PlanEntry);
        ctl.hcxt = TopMemoryContext;
        plan_cache = hash_create("fencing fenced DML plans", 64, &ctl,
                                 HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
    }
    // "<relid> <kind> <len>:<name>... | <len>:<name>...": names are length-
    // prefixed, since a column name may contain any character but NUL.
    char key[kCacheKeySize];
    CacheKey k{key, 0, true};
    k.Number(relid);
    k.Char(static_cast<char>(kind));
    for (int i = 0; i < first.count; ++i) k.Name(first.names[i]);
    k.Char('|');
    for (int i = 0; i < second.count; ++i) k.Name(second.names[i]);
    if (!k.Finish())
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("column names too long for a fenced statement")));
    bool found;
    auto *e = static_cast<PlanEntry *>(hash_search(plan_cache, key, HASH_FIND, &found));
    if (found && e->valid)
        return e;
    SweepPlans();
    e = static_cast<PlanEntry *>(hash_search(plan_cache, key, HASH_ENTER, &found));
    if (found) {
        // Invalid but running (a nested call): build the new plan beside it.
        if (e->running > 0)
            ereport(ERROR, (errcode(ERRCODE_OBJECT_IN_USE),
                            errmsg("the fenced statement on %s changed while it was running",
                                   RelName(relid))));
        ReleaseEntry(e);
    }
    e->relid = relid;
    e->plan = nullptr;
    e->memory = nullptr;
    e->running = 0;
    e->valid = false;
    Target t;
    ResolveTarget(relid, citus_routed, &t);
    Prepare(e, kind, t, first, second);
    return e;
}

void RequireWritePrivilege(Oid relid, DmlKind kind) {
    if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("relation with OID %u does not exist", relid)));
    AclMode mode = kind == DmlKind::kUpdate   ? ACL_UPDATE
                   : kind == DmlKind::kDelete ? ACL_DELETE
                                              : ACL_INSERT;
    RequireRelationPrivilege(relid, mode, kind != DmlKind::kDelete);
}

// The SQL arguments: the target, a non-negative token and the JSON members.
struct CallArgs {
    Oid relid;
    Token token;
    Members first;   // key (update, delete) or row (upsert)
    Members second;  // changes (update)
};

void ReadCallArgs(FunctionCallInfo fcinfo, DmlKind kind, CallArgs *args) {
    const char *names[] = {"target", "token", kind == DmlKind::kUpsert ? "row" : "key", "changes"};
    int nargs = kind == DmlKind::kUpdate ? 4 : 3;
    for (int i = 0; i < nargs; ++i)
        if (PG_ARGISNULL(i))
            ereport(
                ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be NULL", names[i]),
                 i == 1 ? errhint("A fenced write needs the token of the lock it holds.") : 0));
    args->relid = PG_GETARG_OID(0);
    args->token = PG_GETARG_INT64(1);
    if (args->token < 0)
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("fencing token " INT64_FORMAT " out of range", args->token)));
    ReadMembers(PG_GETARG_JSONB_P(2), names[2], false, &args->first);
    args->second.count = 0;
    if (kind == DmlKind::kUpdate)
        ReadMembers(PG_GETARG_JSONB_P(3), names[3], true, &args->second);
}

// The plan's parameter values: the token, then each JSON member converted by
// its column type's input function. nulls is SPI's ' '/'n' string.
void BindParameters(const PlanEntry *e, const CallArgs &args, Datum **values, char **nulls) {
    auto *v = static_cast<Datum *>(palloc(sizeof(Datum) * (e->ncolumns + 1)));
    auto *n = static_cast<char *>(palloc(e->ncolumns + 2));
    v[0] = Int64GetDatum(args.token);
    n[0] = ' ';
    for (int i = 0; i < e->ncolumns; ++i) {
        const Members &m = i < args.first.count ? args.first : args.second;
        int j = i < args.first.count ? i : i - args.first.count;
        ErrorContextCallback callback;
        PushConversionContext(&callback, m.names[j]);
        char *text = JsonValueText(m.values[j], e->array_column[i]);
        v[i + 1] = InputFunctionCall(&e->input[i], text, e->ioparam[i], e->typmod[i]);
        n[i + 1] = text == nullptr ? 'n' : ' ';
        error_context_stack = callback.previous;
    }
    n[e->ncolumns + 1] = '\0';
    *values = v;
    *nulls = n;
}

// What one call did: rows written, rows skipped as stale, and the highest HWM
// that refused one of them (0 when none did).
struct FencedOutcome {
    uint64 written;
    int64 stale;
    Token max_hwm;
};

// Runs the plan inside the fenced call scope of the target.
FencedOutcome ExecuteInFencedCall(PlanEntry *e, const CallArgs &args, Datum *values,
                                  const char *nulls) {
    FencedOutcome outcome = {0, 0, 0};
    FencedCall enclosing = EnterFencedCall(args.relid, args.token);
    e->running++;
    PG_TRY();
    {
        int rc = SPI_execute_plan(e->plan, values, nulls, false, 0);
        if (rc < 0)
            ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION),
                            errmsg("fenced statement failed: %s", SPI_result_code_string(rc))));
        outcome.written = SPI_processed;
        FencedCallStale(&outcome.stale, &outcome.max_hwm);
    }
    PG_FINALLY();
    {
        e->running--;
        LeaveFencedCall(enclosing);
    }
    PG_END_TRY();
    return outcome;
}

// On the coordinator of a Citus table the statement goes to the shard, whose
// guard refuses a stale token (TF001) instead of skipping the row: it does
// not know it runs for a fenced call. Inside a subtransaction that refusal
// becomes the single-node answer, 0 rows; Citus sends the subtransaction to
// the workers as a savepoint, so the caller's transaction goes on. Every
// other error is re-thrown as it came.
struct RoutedCall {
    PlanEntry *entry;
    const CallArgs *args;
    Datum *values;
    const char *nulls;
    uint64 written;
};

void ExecuteRoutedCall(void *arg) {
    auto *call = static_cast<RoutedCall *>(arg);
    call->written = ExecuteInFencedCall(call->entry, *call->args, call->values, call->nulls).written;
}

uint64 ExecuteRoutedToShard(PlanEntry *e, const CallArgs &args, Datum *values, const char *nulls) {
    RoutedCall call = {e, &args, values, nulls, 0};
    ErrorData *error = nullptr;
    // Rolled back before any re-throw: an enclosing exception block rolls
    // back its own subtransaction, not this one.
    if (!RunInSubTransaction(ExecuteRoutedCall, &call, &error) &&
        error->sqlerrcode != ERRCODE_FENCING_STALE_TOKEN)
        ReThrowError(error);
    return call.written;
}

FencedOutcome RunFencedCall(FunctionCallInfo fcinfo, DmlKind kind, bool with_outcome) {
    CallArgs args;
    ReadCallArgs(fcinfo, kind, &args);
    // The caller's rights are checked before anything is planned; the
    // statement itself then runs as the caller, column privileges and RLS
    // included.
    RequireWritePrivilege(args.relid, kind);
    bool routed = CitusRoutesFencedCall(args.relid, !with_outcome && kind != DmlKind::kDelete);
    SPI_connect();
    PlanEntry *e = PlanFor(kind, args.relid, routed, args.first, args.second);
    Datum *values;
    char *nulls;
    BindParameters(e, args, &values, &nulls);
    FencedOutcome outcome = {0, 0, 0};
    if (routed)
        outcome.written = ExecuteRoutedToShard(e, args, values, nulls);
    else
        outcome = ExecuteInFencedCall(e, args, values, nulls);
    SPI_finish();
    return outcome;
}

Datum RunFenced(FunctionCallInfo fcinfo, DmlKind kind) {
    PG_RETURN_INT64(static_cast<int64>(RunFencedCall(fcinfo, kind, false).written));
}

// The _result siblings: (written, stale, hwm), hwm NULL when no row was stale.
Datum RunFencedWithOutcome(FunctionCallInfo fcinfo, DmlKind kind) {
    FencedOutcome outcome = RunFencedCall(fcinfo, kind, true);
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("a fenced_*_result function must return a record")));
    desc = BlessTupleDesc(desc);
    Datum values[3] = {Int64GetDatum(static_cast<int64>(outcome.written)),
                       Int64GetDatum(outcome.stale), Int64GetDatum(outcome.max_hwm)};
    bool nulls[3] = {false, false, outcome.stale == 0};
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

}  // namespace

void ForgetFencedPlans(Oid relid) {
    if (plan_cache == nullptr)
        return;
    HASH_SEQ_STATUS seq;
    hash_seq_init(&seq, plan_cache);
    for (auto *e = static_cast<PlanEntry *>(hash_seq_search(&seq)); e != nullptr;
         e = static_cast<PlanEntry *>(hash_seq_search(&seq)))
        if (relid == InvalidOid || e->relid == relid)
            e->valid = false;
}

}  // namespace fencing::pg

FENCING_FUNCTION(fenced_update) {
    return fencing::pg::RunFenced(fcinfo, fencing::pg::DmlKind::kUpdate);
}
FENCING_FUNCTION(fenced_delete) {
    return fencing::pg::RunFenced(fcinfo, fencing::pg::DmlKind::kDelete);
}
FENCING_FUNCTION(fenced_upsert) {
    return fencing::pg::RunFenced(fcinfo, fencing::pg::DmlKind::kUpsert);
}
FENCING_FUNCTION(fenced_update_result) {
    return fencing::pg::RunFencedWithOutcome(fcinfo, fencing::pg::DmlKind::kUpdate);
}
FENCING_FUNCTION(fenced_delete_result) {
    return fencing::pg::RunFencedWithOutcome(fcinfo, fencing::pg::DmlKind::kDelete);
}
FENCING_FUNCTION(fenced_upsert_result) {
    return fencing::pg::RunFencedWithOutcome(fcinfo, fencing::pg::DmlKind::kUpsert);
}
