// Refusing shard moves that would lose tombstones (pg/ddl/citus_moves.hpp).
#include "pg/ddl/citus_moves.hpp"

#include "pg/base/internal_access.hpp"
#include "pg/base/pg.hpp"
#include "pg/catalog/citus_node.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/hwm/store_shape.hpp"
#include "pg/hwm/store_sql.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
}

namespace fencing::pg {
namespace {

// Whether relid has tombstone rows or a floor above 0, read with the latest
// snapshot: the writers the caller's lock waited for committed after the
// statement's snapshot was taken.
bool TombstonesAfterLock(Oid relid) {
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    bool floors = OidIsValid(hwm::StoreRelid("tombstone_floor"));
    hwm::RunLatest(floors ? "SELECT 1 FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) $1"
                            " UNION ALL SELECT 1 FROM fencing.tombstone_floor"
                            " WHERE relid OPERATOR(pg_catalog.=) $1 AND floor OPERATOR(pg_catalog.>) 0"
                            " LIMIT 1"
                          : "SELECT 1 FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) $1"
                            " LIMIT 1",
                   1, types, values);
    return SPI_processed > 0;
}

void RefusePublishedShard(const RangeVar *name) {
    Oid relid = RangeVarGetRelid(name, NoLock, true);
    if (OidIsValid(relid))
        RefuseLosingShardCopy(relid);
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

void RefuseLosingShardCopy(Oid relid) {
    bool shard;
    if (CitusTableKind(relid, &shard) != CitusTable::kDistributed || !shard)
        return;
    // Every transaction still writing the shard ends first, so its tombstones
    // are read below; a writer that comes later waits for this transaction,
    // then sees the shard in the publication (RefuseTombstoneWhilePublished).
    LockRelationOid(relid, ShareLock);
    InternalSession session;
    BeginInternal(&session);
    ProtectedRow row;
    bool tombstones = ReadProtectedRow(relid, &row) && row.scope == Scope::kRow &&
                      TombstonesAfterLock(relid);
    EndInternal(&session);
    RefuseOnCitus(CitusAction::kShardMove, relid, Scope::kRow, tombstones);
}

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
