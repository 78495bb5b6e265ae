// The fenced call scope: while fenced_update(), fenced_delete() or
// fenced_upsert() runs its statement on a table, every write to that table,
// including those the triggers it fires make, carries the call's token, and
// the table's stale rows are skipped (the call reports 0 rows) instead of
// raising. Writes to other tables are judged as usual.
#pragma once

#include "core/token.hpp"
#include "pg/base/pg.hpp"

namespace fencing::pg {

struct FencedCall {
    bool running;
    Oid relid;
    Token token;
    int64 stale;    // rows of relid skipped as stale so far
    Token max_hwm;  // the highest HWM that refused one of them
};

// Opens the scope of a call on relid with token. Returns the enclosing scope
// (nested calls: a trigger may call fenced_*() again), which the caller must
// restore with LeaveFencedCall in PG_FINALLY.
FencedCall EnterFencedCall(Oid relid, Token token);
void LeaveFencedCall(const FencedCall &enclosing);

// The running call's token, when a fenced call on home_relid is running.
bool FencedCallToken(Oid home_relid, Token *out);

// Whether a stale row of home_relid is skipped because a fenced call on that
// very table is running.
bool FencedCallSkipsStaleRows(Oid home_relid);

// A stale row of the running call's table was skipped; hwm refused it.
void NoteFencedCallStale(Token hwm);

// The running call's stale rows so far and the highest HWM that refused one.
void FencedCallStale(int64 *stale, Token *max_hwm);

}  // namespace fencing::pg
