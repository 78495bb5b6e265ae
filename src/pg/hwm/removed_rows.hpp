// Removed rows of a row-scope table (a DELETE statement, TRUNCATE, DROP or
// DETACH of a partition) leave their HWMs set-based, not one SQL statement
// per row:
//   * up to kFoldThreshold rows: exact tombstones, one INSERT ... ON CONFLICT
//     per kRemovedBatch keys;
//   * more, where the table's retirement is enabled (its precondition: one
//     ordered token source, so every token issued later is above the floor):
//     folded into the table's floor, raised to the highest removed token,
//     with no tombstone per row. The floor lock (pg/hwm/lock.hpp) is taken
//     exclusively first, without waiting: when a transaction keeps the floor
//     it read (or a retirement runs), the rows leave exact tombstones instead.
// A floor only rises (GREATEST), in the removing transaction: a removal that
// aborts raises nothing.
#pragma once

#include "core/policy.hpp"
#include "pg/base/pg.hpp"

extern "C" {
#include "utils/relcache.h"
}

namespace fencing::pg {

constexpr int kRemovedBatch = 1000;
// A removal of more rows than this folds (when retirement is enabled): a
// single-row or small DELETE keeps exact tombstones, so a fresh token for an
// unrelated key is not judged against a raised floor.
constexpr int64 kFoldThreshold = kRemovedBatch;

struct RemovedRows {
    Oid home_relid;
    int natts;      // key elements per key (0: no key seen yet)
    int buffered;   // keys in elems / tokens
    Datum *elems;   // buffered * natts hex texts
    Datum *tokens;  // buffered int8
    Token highest;  // the highest token added
    int64 rows;     // rows added
    bool folding;   // past the threshold and folding: keys no longer kept
    bool fold_tried;
    MemoryContext context;  // the arrays
    MemoryContext batch;    // the buffered keys' copies
};

void BeginRemovedRows(RemovedRows *r, Oid home_relid, MemoryContext parent);
// key: the row's tombstone key (text[]), its size checked by the caller.
void AddRemovedRow(RemovedRows *r, Datum key, Token token);
// When r is folding: counts the row's token and returns true (no key needed);
// else false, and the caller adds the row with AddRemovedRow.
bool AddRemovedToken(RemovedRows *r, Token token);
// Writes what is left (tombstones, or the fold); the number of rows it covered.
int64 EndRemovedRows(RemovedRows *r);

// A deleted row's tombstone, deferred to the end of the executor run that
// deletes it (so that a DELETE statement writes them set-based, or folds);
// false when no executor run is in progress (write it now). Reads of the
// table's tombstones in this transaction write the deferred ones first.
bool DeferRemovedRow(Oid home_relid, Datum key, Token token);
// The same without the key, when this statement's set is already folding
// (the key is not needed then); false otherwise.
bool DeferFoldedRow(Oid home_relid, Token token);
void WriteDeferredRemovals(Oid home_relid);
void RegisterRemovedRowsCallbacks();

}  // namespace fencing::pg
