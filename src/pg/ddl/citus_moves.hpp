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

}  // namespace fencing::pg
