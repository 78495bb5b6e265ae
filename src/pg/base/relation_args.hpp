// Small helpers shared by the SQL-callable functions that take a table.
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "commands/trigger.h"
#include "nodes/parsenodes.h"  // AclMode
}

namespace fencing::pg {

// "schema"."table", quoted as needed, for messages and generated SQL.
const char *RelName(Oid relid);

// Argument n as an existing relation's OID: 22004 when NULL, 42P01 when the
// relation is gone (a regclass can outlive its table).
Oid ExistingRelationArg(FunctionCallInfo fcinfo, int n, const char *argname);

// 42501 unless the current user owns relid ("must be owner of table ...").
void RequireRelationOwner(Oid relid);

// 42501 unless the current user holds mode on relid ("permission denied for
// table ..."). With any_column, mode on any one of its columns is enough too.
void RequireRelationPrivilege(Oid relid, AclMode mode, bool any_column = false);

// The trigger call's data; 39P01 ("<function> can only be called as a
// trigger") when fcinfo is not a trigger call.
TriggerData *TriggerCallData(FunctionCallInfo fcinfo, const char *function);

}  // namespace fencing::pg
