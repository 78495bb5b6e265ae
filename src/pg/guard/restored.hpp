// Tables restored without their fencing state (pg_dump -t, -n, -N fencing
// restored into a database that has the extension): their guards judge by
// the dumped guard's policy but refuse every write (TF004) until the state is
// restored or the table's owner accepts its loss (fencing_reset_restored()).
//
// The mark is a third argument of the table's guards, naming what is
// missing. It needs no table of the extension, so a database whose extension
// SQL predates the library fails closed too, and a dump of the table carries
// it (restored, the table is marked again).
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "utils/rel.h"
}

namespace fencing::pg {

// Whether this transaction set or lifted relid's mark (SetRestoredMark);
// *mark is then the mark set (nullptr: lifted).
bool RestoredMarkChanged(Oid relid, const char **mark);

// For the rest of this transaction, relid's guards are installed with mark
// (nullptr: without one, the mark lifted).
void SetRestoredMark(Oid relid, const char *mark);

// A marked table dropped by this transaction keeps its mark under its
// qualified name for a table that takes the name and its kept state.
void KeepDroppedMark(const char *qualified_name, const char *mark);
// The mark kept for that name, or nullptr.
const char *DroppedMark(const char *qualified_name);

void RegisterRestoredCallbacks();

// TF004 for a write to a table whose guard carries mark.
[[noreturn]] void RefuseRestoredWrite(Relation rel, const char *mark);

}  // namespace fencing::pg
