// Whether another transaction is writing a resource's lease row right now:
// what a first acquire's INSERT ... ON CONFLICT would wait for.
#pragma once

#include "pg/base/pg.hpp"

namespace fencing::pg {

// A dirty-snapshot look at fencing.lease's primary key for (namespace,
// resource), as the unique check takes it: the other transaction (open, or
// prepared) inserting, updating or deleting a version of the row;
// InvalidTransactionId when none is.
TransactionId LeaseRowWriter(const char *name_space, const char *resource);

}  // namespace fencing::pg
