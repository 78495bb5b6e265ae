#pragma once

#include "core/token.hpp"
#include "pg/pg.hpp"

namespace fencing::pg {

// Both raise the documented SQLSTATEs (22P02 syntax, 22003 range) on bad input.
Token ParseTokenOrError(const char *text);
Token TokenFromInt64(int64 value);

}  // namespace fencing::pg
