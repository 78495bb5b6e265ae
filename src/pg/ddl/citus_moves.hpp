// Shard moves on Citus that would lose fencing state are refused.
//
// A logical shard move (citus_move_shard_placement, rebalance_table_shards)
// publishes the shard on its source worker with CREATE PUBLICATION and
// copies its rows to the target; fencing.row_tombstone stays behind. The
// publication of a shard of a fenced row-scope table with tombstones is
// refused (0A000), so the move fails and the shard stays where it is. The
// check runs from the ddl_command_start event trigger
// (fencing_publication_check), which loads the library in any session.
#pragma once

#include "pg/base/pg.hpp"

namespace fencing::pg {

// CREATE PUBLICATION ... FOR TABLE, ALTER PUBLICATION ... ADD/SET TABLE:
// refuses a listed shard that would leave its tombstones behind. Any other
// statement passes.
void RefuseLosingPublication(Node *stmt);

// Refuses (0A000) publishing or copying relid when it is a shard of a
// distributed table fenced in row scope with tombstones or a tombstone floor.
// Takes ShareLock on the shard until the transaction ends: writers in flight
// finish first (their tombstones are seen), later ones wait.
void RefuseLosingShardCopy(Oid relid);

// _PG_init: the function manager hook that refuses Citus's block_writes shard
// copies (worker_copy_table_to_node, worker_split_copy) of such a shard, and
// undistribute_table(), alter_distributed_table() and
// alter_table_set_access_method() of a fenced Citus table.
void RegisterCitusCopyHooks();

}  // namespace fencing::pg
