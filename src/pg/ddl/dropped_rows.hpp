// A fenced table dropped and re-created in one transaction (Alembic's batch
// recreate, a swap by rename) hands its policy and state to the table that
// takes its name (fencing.adopt_dropped_state). The rows' own tokens are part
// of that state: a copy made before the DROP misses any write committed after
// it, and the new table would then judge the key by an older token. So the
// DROP keeps each row's key and token for the transaction, and the adopting
// table must hold every one of them at that token or above.
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "nodes/pg_list.h"
}

namespace fencing::pg {

// At the DROP of fenced table home (while its catalog stands and its leaves,
// the members of going, are locked against writers): keeps the key and token
// of every row of its leaves under its qualified name. Returns whether it
// kept any row.
bool KeepDroppedRows(Oid home, const List *going);
// The DROP of home found a write its transaction's copy may lack (why: the
// DETAIL; pg/ddl/copy_snapshot.hpp): a table that takes home's name in this
// transaction is refused (40001); a DROP for good goes on.
void KeepDroppedUnseenWrite(Oid home, const char *why);

// Row scope, after home took over another table's tombstones (an adoption, a
// transfer): raises 40001 when a row of home's leaves (locked against writers
// by the caller) is below its key's tombstone, a key deleted from the old
// table after the copy was made; the new table would bring it back.
// A row at its key's tombstone whose key the old table lacks counts too (a
// DELETE at the row's own token): old_relid, or, InvalidOid, the rows the
// DROP of old_table kept. old_label names the old table in the message,
// old_table in the hint.
void RequireNoRowBelowTombstone(Oid home, const char *token_column, const char *old_label,
                                const char *old_table, Oid old_relid);
// Refuses (55000) an ATTACH that brought home a tombstone for a key that has
// a live row in home's tree below it: that row, not the tombstone, would
// judge the key's writers.
void RequireNoLiveRowBelowAttachedTombstone(Oid home, const char *token_column,
                                            const char *attached);

}  // namespace fencing::pg
