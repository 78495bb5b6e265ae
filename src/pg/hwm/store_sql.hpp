// The HWM store's fixed statements for the SPI paths (pg/hwm/store.hpp).
#pragma once

#include "core/token.hpp"
#include "pg/base/internal_access.hpp"

namespace fencing::pg::hwm {

// Prepared once per backend and kept (SPI_keepplan). Every name is
// schema-qualified and every operator is pg_catalog's, so neither the
// caller's search_path nor a replan can change what runs.
//   *_raise: the conditional UPDATE (strict: $last says hwm < token, else <=)
//   *_read:  the stored HWM
//   *_first: INSERT ... ON CONFLICT DO NOTHING, a first write
//   *_lock:  the row locked as a raise locks it, before the HWM lock
//   *_stamped: the same, also setting raised_at (the tables that have it)
extern InternalStatement resource_raise;
extern InternalStatement resource_raise_stamped;
extern InternalStatement resource_lock;
extern InternalStatement table_lock;
extern InternalStatement tombstone_raise_stamped;
extern InternalStatement resource_read;
extern InternalStatement resource_first;
extern InternalStatement table_raise;
extern InternalStatement table_read;
extern InternalStatement table_first;
extern InternalStatement tombstone_read;
extern InternalStatement tombstone_raise;

// Runs a kept statement (inside an internal session); returns rows processed.
uint64 Run(InternalStatement *stmt, Datum *values);

// First column of the first row as int8 (NULL as 0), when there is a row.
bool FirstInt8(Token *out);

// Runs a fixed statement (inside an internal session) with the latest
// snapshot, not the transaction's: DDL and policy changes carrying state
// must read what committed before they got their locks, also under
// REPEATABLE READ. Returns rows processed.
uint64 RunLatest(const char *sql, int nargs, Oid *types, Datum *values);
// The first row's first column as int8, when there is a row and it is not NULL.
bool FirstInt8NotNull(Token *out);

}  // namespace fencing::pg::hwm
