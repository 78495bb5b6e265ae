// The snapshot a READ COMMITTED transaction first copied a fenced table with.
//
// A migration copies a table (INSERT ... SELECT, CREATE TABLE ... AS), then
// drops it and lets the copy take its name, in one transaction. Under READ
// COMMITTED a fenced write committed between the copy and the DROP is in the
// dropped table and not in the copy. Tokens alone cannot tell every such
// write (one at the token the row already held, a DELETE in table scope), so
// the first statement of a transaction that reads a fenced table into
// another one keeps its snapshot until the transaction ends (which also keeps
// the rows it saw from being pruned), and the DROP compares the table as
// that snapshot saw it with the table as it is (policy_store.hpp,
// RequireRowsInSnapshot).
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "utils/snapshot.h"
}

namespace fencing::pg {

// _PG_init: the executor hook that records the snapshots.
void RegisterCopySnapshotHooks();
// The snapshot this transaction first read relid (a leaf) with into another
// table, or nullptr. Valid until the transaction ends.
Snapshot CopySnapshotOf(Oid relid);
// Under READ COMMITTED: refuses (40001) when a leaf of relid (locked by the
// caller) that this transaction copied was written by another transaction
// after the copy's snapshot. what: the step, for the message.
void RequireRowsAsCopied(Oid relid, const char *what);

}  // namespace fencing::pg
