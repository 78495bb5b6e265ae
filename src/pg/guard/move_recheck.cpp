#include "pg/guard/move_recheck.hpp"

#include "pg/guard/triggers.hpp"
#include "pg/keys/row_key.hpp"

extern "C" {
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "nodes/makefuncs.h"
#include "utils/rel.h"
}

namespace fencing::pg {

void InstallMoveRecheck(Oid leaf, const CreateTrigStmt *recheck, Oid function) {
    // The caller (SyncGuards) holds ShareRowExclusiveLock on leaf.
    Relation rel = table_open(leaf, AccessShareLock);
    PrimaryKey pk;
    List *columns = NIL;
    if (GetPrimaryKey(rel, &pk)) {
        for (int i = 0; i < pk.natts; ++i) {
            Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), pk.attnums[i] - 1);
            columns = lappend(columns, makeString(pstrdup(NameStr(att->attname))));
        }
    }
    table_close(rel, AccessShareLock);
    if (columns == NIL)
        return;

    CreateTrigStmt *stmt = static_cast<CreateTrigStmt *>(copyObjectImpl(recheck));
    stmt->trigname = GuardTriggerName(kMoveRecheckName, leaf);  // not internal: pg_upgrade keeps it
    stmt->timing = TRIGGER_TYPE_AFTER;
    stmt->events = TRIGGER_TYPE_UPDATE;
    stmt->columns = columns;
    ObjectAddress trigger = CreateTrigger(stmt, nullptr, leaf, InvalidOid, InvalidOid, InvalidOid,
                                          function, InvalidOid, nullptr, false, false);
    // CreateTrigger made the trigger depend on each key column, which would
    // make DROP COLUMN of a key column need CASCADE and ALTER COLUMN TYPE
    // fail ("column used in a trigger definition"). The guards are re-synced
    // after every ALTER TABLE of a protected table (OnTableDdl), so the column
    // list follows the primary key without those dependencies. The trigger
    // keeps its automatic dependency on the table.
    CommandCounterIncrement();
    deleteDependencyRecordsForClass(TriggerRelationId, trigger.objectId, RelationRelationId,
                                    DEPENDENCY_NORMAL);
}

}  // namespace fencing::pg
