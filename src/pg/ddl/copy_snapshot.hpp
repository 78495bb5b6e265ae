// The snapshot a READ COMMITTED transaction first read a fenced table with.
//
// A migration copies a table (INSERT ... SELECT, CREATE TABLE ... AS, or a
// client that SELECTs and INSERTs what it read), then drops it and lets the
// copy take its name, in one transaction. Under READ COMMITTED a fenced write
// committed between the read and the DROP is in the dropped table and not in
// the copy. Tokens alone cannot tell every such write (one at the token the
// row already held, a DELETE in table scope), so the first statement of a
// transaction that reads a fenced table keeps its snapshot until the
// transaction ends (which also keeps the rows it saw from being pruned), and
// a recreate compares the table as that snapshot saw it with the table as it
// is.
#pragma once

#include "pg/base/pg.hpp"

namespace fencing::pg {

// _PG_init: the executor hook that records the snapshots. A library loaded
// in the middle of a transaction (no shared_preload_libraries) did not see
// the statements before: see RowsChangedSinceRead.
void RegisterCopySnapshotHooks();
// Under READ COMMITTED: whether a leaf of relid (locked by the caller) was
// written by another transaction after this transaction first read it (a
// leaf attached since: after the tree's first read), or whether that cannot
// be known (the library was loaded after this transaction's first
// statement). *why: the DETAIL, when true.
bool RowsChangedSinceRead(Oid relid, const char **why);
// The same, refused (40001) at once. what: the step, for the message.
void RequireRowsAsRead(Oid relid, const char *what);
// The 40001 of a step that would carry table's state past such a write.
[[noreturn]] void RefuseChangedSinceRead(const char *table, const char *what, const char *why);

}  // namespace fencing::pg
