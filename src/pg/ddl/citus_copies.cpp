// Citus's copies of a shard without a publication, and its rebuilds of a
// table, refused when they would lose fencing state (pg/ddl/citus_moves.hpp).
//
// A block_writes shard move or copy calls pg_catalog.worker_copy_table_to_node
// (shard, node) on the source worker, a blocking split
// pg_catalog.worker_split_copy(shard id, ...); undistribute_table(),
// alter_distributed_table() and alter_table_set_access_method() run on the
// coordinator. All are Citus's own C functions, called with literal
// arguments. The function manager hook marks them (by OID, looked up by name
// in pg_catalog; nothing else is marked) and judges each call from the first
// argument of its call expression before the function runs.
#include "pg/ddl/citus_moves.hpp"

#include "pg/base/internal_access.hpp"
#include "pg/catalog/citus_node.hpp"
#include "pg/types/token_type.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/primnodes.h"
#include "utils/catcache.h"
#include "utils/inval.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace fencing::pg {
namespace {

enum class Watched { kNone, kCopyShard, kSplitShard, kReshape };

struct WatchedName {
    const char *name;
    Watched what;
};

constexpr WatchedName kWatchedNames[] = {
    {"worker_copy_table_to_node", Watched::kCopyShard},
    {"worker_split_copy", Watched::kSplitShard},
    {"undistribute_table", Watched::kReshape},
    {"alter_distributed_table", Watched::kReshape},
    {"alter_table_set_access_method", Watched::kReshape},
};

// The marked functions' OIDs, looked up again after any pg_proc change.
constexpr int kMaxWatched = 16;
struct WatchedOids {
    bool valid;
    uint64 generation;  // bumped by every pg_proc invalidation
    int count;
    Oid oids[kMaxWatched];
    Watched what[kMaxWatched];
};
WatchedOids watched = {};

needs_fmgr_hook_type previous_needs_hook = nullptr;
fmgr_hook_type previous_hook = nullptr;

void ForgetWatched(Datum, SysCacheCallbackId, uint32) {
    watched.valid = false;
    ++watched.generation;
}

void LookUpWatched() {
    uint64 generation = watched.generation;
    watched.count = 0;
    for (const WatchedName &w : kWatchedNames) {
        CatCList *list = SearchSysCacheList1(PROCNAMEARGSNSP, CStringGetDatum(w.name));
        for (int i = 0; i < list->n_members && watched.count < kMaxWatched; ++i) {
            auto *proc = reinterpret_cast<Form_pg_proc>(GETSTRUCT(&list->members[i]->tuple));
            if (proc->pronamespace != PG_CATALOG_NAMESPACE)
                continue;
            watched.oids[watched.count] = proc->oid;
            watched.what[watched.count] = w.what;
            ++watched.count;
        }
        ReleaseSysCacheList(list);
    }
    // An invalidation while looking: look again next time.
    watched.valid = generation == watched.generation;
}

Watched WatchedAs(Oid fn) {
    if (!watched.valid) {
        if (!IsTransactionState())
            return Watched::kNone;
        LookUpWatched();
    }
    for (int i = 0; i < watched.count; ++i)
        if (watched.oids[i] == fn)
            return watched.what[i];
    return Watched::kNone;
}

// The first argument of the call, when the call expression has it as a
// constant of type type.
bool FirstConstArgument(const FmgrInfo *flinfo, Oid type, Datum *value) {
    Node *expr = flinfo->fn_expr;
    if (expr == nullptr || !IsA(expr, FuncExpr))
        return false;
    List *args = castNode(FuncExpr, expr)->args;
    if (args == NIL || !IsA(linitial(args), Const))
        return false;
    const Const *arg = castNode(Const, linitial(args));
    if (arg->constisnull || arg->consttype != type)
        return false;
    *value = arg->constvalue;
    return true;
}

// Whether relid has a fencing_token column: its shards are fenced.
bool HasTokenColumn(Oid relid) {
    Relation rel = try_relation_open(relid, AccessShareLock);
    if (rel == nullptr)
        return false;
    TupleDesc desc = RelationGetDescr(rel);
    bool found = false;
    for (int i = 0; i < desc->natts && !found; ++i) {
        Form_pg_attribute att = TupleDescAttr(desc, i);
        found = !att->attisdropped && IsFencingTokenType(att->atttypid);
    }
    relation_close(rel, NoLock);
    return found;
}

// The shard relation of shard id shardid on this node (InvalidOid: none).
Oid ShardRelid(int64 shardid) {
    Oid types[] = {INT8OID};
    Datum values[] = {Int64GetDatum(shardid)};
    InternalSession session;
    BeginInternal(&session);
    Oid relid = InvalidOid;
    if (RunInternalSql("SELECT pg_catalog.to_regclass(pg_catalog.shard_name(logicalrelid, "
                       "shardid, false))::pg_catalog.oid FROM pg_catalog.pg_dist_shard "
                       "WHERE shardid OPERATOR(pg_catalog.=) $1",
                       1, types, values, nullptr, true) > 0) {
        bool isnull;
        Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
        if (!isnull)
            relid = DatumGetObjectId(d);
    }
    EndInternal(&session);
    return relid;
}

void JudgeCall(const FmgrInfo *flinfo) {
    Watched what = WatchedAs(flinfo->fn_oid);
    // A database without the extension has nothing of ours to lose.
    if (what == Watched::kNone || !OidIsValid(FencingTokenTypeOid()))
        return;
    Datum arg;
    bool known =
        FirstConstArgument(flinfo, what == Watched::kSplitShard ? INT8OID : REGCLASSOID, &arg);
    if (!known) {
        // Called some other way than Citus calls it: which table is unknown.
        RefuseOnCitus(CitusAction::kUnjudgedCopy, InvalidOid, Scope::kRow);
        return;
    }
    switch (what) {
        case Watched::kCopyShard:
            RefuseLosingShardCopy(DatumGetObjectId(arg));
            break;
        case Watched::kSplitShard: {
            Oid relid = ShardRelid(DatumGetInt64(arg));
            if (OidIsValid(relid))
                RefuseLosingShardCopy(relid);
            break;
        }
        case Watched::kReshape: {
            Oid relid = DatumGetObjectId(arg);
            RefuseOnCitus(CitusAction::kReshape, relid, Scope::kRow, HasTokenColumn(relid));
            break;
        }
        case Watched::kNone:
            break;
    }
}

bool NeedsHook(Oid fn) {
    if (previous_needs_hook != nullptr && previous_needs_hook(fn))
        return true;
    return WatchedAs(fn) != Watched::kNone;
}

// Judged before the next hook sees the start: a refusal here leaves it no
// call to end.
void OnCall(FmgrHookEventType event, FmgrInfo *flinfo, Datum *arg) {
    if (event == FHET_START)
        JudgeCall(flinfo);
    if (previous_hook != nullptr)
        previous_hook(event, flinfo, arg);
}

}  // namespace

void RegisterCitusCopyHooks() {
    previous_needs_hook = needs_fmgr_hook;
    needs_fmgr_hook = NeedsHook;
    previous_hook = fmgr_hook;
    fmgr_hook = OnCall;
    CacheRegisterSyscacheCallback(PROCOID, ForgetWatched, 0);
}

}  // namespace fencing::pg
