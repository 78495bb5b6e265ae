// ALTER COLUMN ... TYPE on a fenced table that keeps its fencing state:
// a bigint token column converted to fencing_token in place, and a
// row-scope integer key column changing integer width (its tombstones
// rekeyed in the same transaction). Everything else stays refused by
// pg/ddl/checks.cpp.
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace fencing::pg {

// Whether ALTER COLUMN ... TYPE of token column attnum of rel keeps every
// row's token (bigint to fencing_token, the values kept).
bool KeepsTokens(Oid rel, AttrNumber attnum, const AlterTableCmd *cmd);

// For primary key column attnum of row-scope rel (named: the relation the
// ALTER names; home: its fencing home, which has tombstones): an integer
// column to another integer width, values kept, locks the tables and rekeys
// the tombstones, returning true; false (nothing done) for any other change.
bool CarryTombstonesThroughKeyType(Oid named, Oid rel, Oid home, AttrNumber attnum,
                                   const AlterTableCmd *cmd);

}  // namespace fencing::pg
