#pragma once

#include "core/token.hpp"
#include "pg/pg.hpp"

namespace fencing::pg {

void DefineSettings();

// The token a write to the protected table home_relid carries: the call's
// token while a fenced_*() statement on that table runs, otherwise
// fencing.token (already parsed); false when there is none.
bool SessionToken(Oid home_relid, Token *out);

// Whether a stale row of home_relid is to be skipped because a fenced_*()
// statement on that very table is running.
bool FencedDmlSkips(Oid home_relid);

bool AutoProtectEnabled();

// Set while fenced_update() and its siblings run their statement on
// fenced_dml_relid: its stale rows are skipped (the function reports zero
// rows) instead of raising. Writes that user triggers cascade to other tables
// are judged as usual.
extern int fenced_dml_depth;
extern Token fenced_dml_token;
extern Oid fenced_dml_relid;

}  // namespace fencing::pg
