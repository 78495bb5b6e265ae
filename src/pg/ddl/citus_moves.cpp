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
#include "utils/lsyscache.h"
}

namespace fencing::pg {
namespace {

// A shard of a distributed table, fenced in row scope, with tombstones or a
// tombstone floor (retirement, or a bulk removal folded into it).
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
        ReadProtectedRow(relid, &row) && row.scope == Scope::kRow &&
        (HasTombstones(relid) || TombstoneFloor(relid) > 0);
    EndInternal(&session);
    RefuseOnCitus(CitusAction::kShardMove, relid, Scope::kRow, tombstones);
}

void RefusePublishedShards(List *objects) {
    ListCell *lc;
    foreach (lc, objects) {
        auto *object = static_cast<PublicationObjSpec *>(lfirst(lc));
        if (object->pubobjtype == PUBLICATIONOBJ_TABLE && object->pubtable != nullptr)
            RefusePublishedShard(object->pubtable->relation);
    }
}

}  // namespace

void RefuseLosingPublication(Node *stmt) {
    if (IsA(stmt, CreatePublicationStmt)) {
        RefusePublishedShards(castNode(CreatePublicationStmt, stmt)->pubobjects);
    } else if (IsA(stmt, AlterPublicationStmt)) {
        auto *alter = castNode(AlterPublicationStmt, stmt);
        if (alter->action != AP_DropObjects)
            RefusePublishedShards(alter->pubobjects);
    }
}

}  // namespace fencing::pg
