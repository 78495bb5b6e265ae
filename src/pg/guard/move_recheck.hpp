// Row scope: the AFTER UPDATE OF <primary key columns> recheck that catches a
// key move racing a DELETE of its new key (see fencing.recheck()).
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace fencing::pg {

// Creates the trigger kMoveRecheckName_<leaf oid> on leaf, firing function
// AFTER UPDATE OF the leaf's primary key columns, from the AFTER INSERT
// recheck's statement (same arguments). No-op when the leaf has no primary key.
void InstallMoveRecheck(Oid leaf, const CreateTrigStmt *recheck, Oid function);

}  // namespace fencing::pg
