#pragma once

#include "core/token.hpp"
#include "pg/base/pg.hpp"

namespace fencing::pg {

// _PG_init: defines the settings and installs the utility hook that refuses
// SET LOCAL fencing.token outside a transaction block (25P01).
void DefineSettings();

// The token a write to the protected table home_relid carries: the call's
// token while a fenced_*() statement on that table runs (pg/api/fenced_dml.hpp),
// otherwise fencing.token (already parsed); false when there is none. A
// fencing.token that the current transaction did not set (a session value)
// raises TF002 unless fencing.allow_session_token is on.
bool SessionToken(Oid home_relid, Token *out);

bool AutoProtectEnabled();

}  // namespace fencing::pg
