#pragma once

#include "core/token.hpp"

namespace fencing::pg {

void DefineSettings();

// fencing.token, already parsed; false when unset (empty).
bool SessionToken(Token *out);

bool AutoProtectEnabled();

// Set while fenced_update() and its siblings run their statement: stale rows
// are skipped (the function reports zero rows) instead of raising.
extern int fenced_dml_depth;

}  // namespace fencing::pg
