#pragma once

#include "core/token.hpp"
#include "pg/pg.hpp"

namespace fencing::pg {

void DefineSettings();

// The token a write to the protected table home_relid carries: the call's
// token while a fenced_*() statement on that table runs (pg/fenced_dml.hpp),
// otherwise fencing.token (already parsed); false when there is none.
bool SessionToken(Oid home_relid, Token *out);

bool AutoProtectEnabled();

}  // namespace fencing::pg
