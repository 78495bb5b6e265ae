// Refusing shard moves that would lose tombstones (pg/ddl/citus_moves.hpp).
#include "pg/ddl/citus_moves.hpp"

#include "pg/base/internal_access.hpp"
#include "pg/base/pg.hpp"
#include "pg/catalog/citus_node.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/hwm/store.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/lsyscache.h"
}

namespace fencing::pg {
namespace {

ProcessUtility_hook_type previous_utility_hook = nullptr;

// A shard of a distributed table, fenced in row scope, with tombstones.
void RefusePublishedShard(const RangeVar *name) {
    Oid relid = RangeVarGetRelid(name, NoLock, true);
    if (!OidIsValid(relid))
        return;
    bool shard;
    if (CitusTableKind(relid, &shard) != CitusTable::kDistributed || !shard)
        return;
    InternalSession session;
    BeginInternal(&session);
    ProtectedRow row;
    bool tombstones =
        ReadProtectedRow(relid, &row) && row.scope == Scope::kRow && HasTombstones(relid);
    EndInternal(&session);
    RefuseOnCitus(CitusAction::kShardMove, relid, Scope::kRow, tombstones);
}

void RefuseLosingPublication(Node *stmt) {
    if (!IsA(stmt, CreatePublicationStmt))
        return;
    ListCell *lc;
    foreach (lc, castNode(CreatePublicationStmt, stmt)->pubobjects) {
        auto *object = static_cast<PublicationObjSpec *>(lfirst(lc));
        if (object->pubobjtype == PUBLICATIONOBJ_TABLE && object->pubtable != nullptr)
            RefusePublishedShard(object->pubtable->relation);
    }
}

void CheckUtility(PlannedStmt *pstmt, const char *query, bool read_only_tree,
                  ProcessUtilityContext context, ParamListInfo params, QueryEnvironment *env,
                  DestReceiver *dest, QueryCompletion *qc) {
    RefuseLosingPublication(pstmt->utilityStmt);
    if (previous_utility_hook != nullptr)
        previous_utility_hook(pstmt, query, read_only_tree, context, params, env, dest, qc);
    else
        standard_ProcessUtility(pstmt, query, read_only_tree, context, params, env, dest, qc);
}

}  // namespace

void RegisterCitusMoveHook() {
    previous_utility_hook = ProcessUtility_hook;
    ProcessUtility_hook = CheckUtility;
}

}  // namespace fencing::pg
