// Row scope: a row's HWM is its own token, so rows that leave a fenced
// table's partition tree (DROP TABLE of a partition, DROP SCHEMA ... CASCADE
// or DROP OWNED that drops one, DETACH PARTITION) first leave a tombstone
// under the home table for their key, in the DDL's own transaction: a stale
// re-insert of the key, in whichever partition it lands, is then refused as
// after a DELETE. Resource and table scope keep their HWMs in rows keyed by
// the home table, which such DDL leaves alone.
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "nodes/nodes.h"
#include "nodes/pg_list.h"
}

namespace fencing::pg {

// Tombstones every row of removed (a partition or a partitioned partition,
// whose leaves the caller has locked against writers) under home, the
// row-scope table it leaves (DETACH PARTITION: the leaves may already be
// guarded as their own home). Returns how many tombstones were written or
// raised.
int64 TombstoneRowsUnder(Oid removed, Oid home);

// ddl_command_start of DROP TABLE, DROP SCHEMA and DROP OWNED: tombstones the
// rows of every row-scope partition the command drops while its home stays.
void BeforeDrop(Node *tree);

}  // namespace fencing::pg
