// Shard moves on Citus that would lose fencing state are refused.
//
// A logical shard move (citus_move_shard_placement, rebalance_table_shards)
// publishes the shard on its source worker with CREATE PUBLICATION and
// copies its rows to the target; fencing.row_tombstone stays behind. The
// publication of a shard of a fenced row-scope table with tombstones is
// refused (0A000), so the move fails and the shard stays where it is.
#pragma once

namespace fencing::pg {

// Installs the ProcessUtility hook; once, from _PG_init.
void RegisterCitusMoveHook();

}  // namespace fencing::pg
