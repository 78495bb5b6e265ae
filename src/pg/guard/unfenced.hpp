// fencing_allow_unfenced(target, reason): a table owner's explicit choice to
// write a table that requires a token without one (a migration, a backfill,
// an admin fix), for the rest of the current transaction only.
//
// The choice belongs to the (sub)transaction that made it: it is dropped when
// that subtransaction aborts (ROLLBACK TO SAVEPOINT) and when the transaction
// ends. It admits writes that carry no token; a write that carries one is
// fenced as always. Each call is logged; the writes it admits are counted as
// unfenced writes (pg/base/stats.hpp).
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "utils/relcache.h"
}

namespace fencing::pg {

// _PG_init: the transaction callbacks that drop the choices.
void RegisterUnfencedCallbacks();

// Whether a token-less write to rel (a protected table, or one of its leaf
// partitions, whose protected table is home_relid) is admitted by a choice of
// the current transaction made by the current role.
bool UnfencedWritesAllowed(Relation rel, Oid home_relid);

}  // namespace fencing::pg
