// Settings: fencing.token, fencing.allow_session_token, fencing.auto_protect,
// fencing.retire_batch_size.
#pragma once

#include "core/token.hpp"
#include "pg/base/pg.hpp"

namespace fencing::pg {

// _PG_init: defines the settings and installs the utility hook that refuses
// SET LOCAL fencing.token outside a transaction block (25P01).
void DefineSettings();

// fencing.token, already parsed; false when it is not set. A value that the
// current transaction did not set (a session value) raises TF002 unless
// fencing.allow_session_token is on; a value SET before the library was
// loaded that does not parse raises 22P02. Which token a write carries is
// the guard's decision (pg/guard/guard.cpp, CarriedToken).
bool TokenSetting(Token *out);

bool AutoProtectEnabled();
// fencing.retire_batch_size: how many entries one retirement batch retires at most.
int RetireBatchSize();

}  // namespace fencing::pg
