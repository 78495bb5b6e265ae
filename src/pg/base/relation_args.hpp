// Small helpers shared by the SQL-callable functions that take a table.
#pragma once

#include "pg/base/pg.hpp"

namespace fencing::pg {

// "schema"."table", quoted as needed, for messages and generated SQL.
const char *RelName(Oid relid);

// Argument n as an existing relation's OID: 22004 when NULL, 42P01 when the
// relation is gone (a regclass can outlive its table).
Oid ExistingRelationArg(FunctionCallInfo fcinfo, int n, const char *argname);

}  // namespace fencing::pg
