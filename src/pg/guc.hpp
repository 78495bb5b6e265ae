#pragma once

#include "core/token.hpp"

namespace fencing::pg {

void DefineSettings();

// The token writes carry: fenced_dml_token while a fenced_*() statement runs,
// otherwise fencing.token (already parsed); false when there is none.
bool SessionToken(Token *out);

bool AutoProtectEnabled();

// Set while fenced_update() and its siblings run their statement: stale rows
// are skipped (the function reports zero rows) instead of raising.
extern int fenced_dml_depth;
extern Token fenced_dml_token;

}  // namespace fencing::pg
