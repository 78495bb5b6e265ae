// fenced_update() and its siblings run one statement on their target table.
// While it runs, writes to that table take the call's token, and its stale
// rows are skipped (the function reports zero rows) instead of raising.
// Writes that user triggers cascade to other tables are judged as usual.
#pragma once

#include "core/token.hpp"
#include "pg/base/pg.hpp"

namespace fencing::pg {

// The call's token while a fenced_*() statement on home_relid runs.
bool FencedDmlToken(Oid home_relid, Token *out);

// Whether a stale row of home_relid is to be skipped because a fenced_*()
// statement on that very table is running.
bool FencedDmlSkips(Oid home_relid);

}  // namespace fencing::pg
