// A dumped guard's CREATE TRIGGER (pg_restore's post-data section, or a
// schema-only restore before its data): its arguments carry the policy the
// table was dumped under. A table whose policy this database holds as dumped
// gets its guards from it; any other (no policy, or auto-protection's row
// scope with defaults: a dump of single tables, which leaves fencing's data
// out) takes the dumped policy and is marked restored without its state
// (pg/guard/restored.hpp): every write refused until the state is restored
// (fencing's data arriving lifts the mark) or its owner accepts the loss
// (fencing_reset_restored(), logged).
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace fencing::pg {

// At ddl_command_end of CREATE TRIGGER ... EXECUTE FUNCTION fencing.guard(...)
// on relid. False when the arguments are no dumped policy: the caller treats
// it as any other fencing trigger.
bool AdoptDumpedGuard(Oid relid, const CreateTrigStmt *stmt);

}  // namespace fencing::pg
