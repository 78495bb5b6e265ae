// Settings: fencing.token, fencing.allow_session_token, fencing.auto_protect,
// fencing.retire_batch_size.
#pragma once

#include "core/token.hpp"
#include "pg/base/pg.hpp"

namespace fencing::pg {

// _PG_init: defines the settings and installs the hooks (utility, executor
// start, transaction) that refuse, at its commit, an implicit transaction
// whose last statement is a SET LOCAL fencing.token (25P01): the token would
// be lost. In a pipeline, a batch or a multi-statement string the SET LOCAL
// holds for the later statements of the same implicit transaction.
void DefineSettings();

// What fencing.token carries for a write (*out: its value, when set).
//   kNone          not set;
//   kTransaction   set by the current transaction (SET LOCAL, set_config(...,
//                  true), a SET inside the block, a function's SET clause), or
//                  a session value while fencing.allow_session_token is on; a
//                  value SET before the library was loaded that does not
//                  parse raises 22P02;
//   kStraySession  a session value (an earlier transaction's SET, ALTER ROLE
//                  or DATABASE ... SET, postgresql.conf, a connection option):
//                  it fences nothing. A write that carries a token of its own
//                  is judged by that token alone; one that carries nothing
//                  else is refused with RefuseStraySessionToken.
// Which token a write carries is the guard's decision (pg/guard/guard.cpp,
// CarriedToken).
enum class CarriedSetting { kNone, kTransaction, kStraySession };
CarriedSetting TokenSetting(Token *out);
// TF002 for a write whose only token is a session value, saying where that
// value came from.
[[noreturn]] void RefuseStraySessionToken();

bool AutoProtectEnabled();
// fencing.retire_batch_size: how many entries one retirement batch retires at most.
int RetireBatchSize();

}  // namespace fencing::pg
