// Row scope: the AFTER INSERT rechecks of one statement that writes many
// rows, judged with one look at fencing.row_tombstone instead of one per row.
//
// A statement's AFTER ROW events fire together, once all of its rows are in
// the primary key index: every DELETE that raced one of them has committed
// (the insertion waited for it) and left its tombstone or folded into the
// floor by then. So one dirty-snapshot look at the table's tombstones, taken
// at the statement's second recheck, answers for all of its rows: when the
// table has none (none committed, none being written), no row of the
// statement has one, and each is judged against the floor alone.
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "commands/trigger.h"
}

namespace fencing::pg {

// Every guard firing (any table, any event) calls this: a write between two
// rechecks of a statement (a user trigger's DML) makes the next recheck look
// again.
void NoteGuardFiring();

// Whether this recheck of an INSERT may take the table's tombstones as none:
// false for the statement's first row (a single-row INSERT reads its key's
// tombstone as before), and whenever the table has or is being given one.
bool StatementStoresNoTombstone(const TriggerData *td, Oid home_relid);

}  // namespace fencing::pg
