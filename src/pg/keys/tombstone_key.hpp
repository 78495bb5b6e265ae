// Row scope: the canonical form of a primary key, under which a deleted row's
// tombstone is stored in fencing.row_tombstone (relid, key text[], hwm).
//
// Two keys must find the same tombstone exactly when the primary key's own
// equality says they are equal, whatever the session's client_encoding,
// DateStyle, TimeZone, extra_float_digits or IntervalStyle. Only an allowlist
// of types has such a form here; a row-scope primary key of any other type
// (or with a nondeterministic collation, a foreign equality, or DEFERRABLE) is
// refused when the table is protected, and the guard refuses tombstone
// operations on such a table protected before (fail closed).
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "utils/relcache.h"
}

namespace fencing::pg {

// Whether a primary key column of this type (a domain counts as its base
// type), compared under this collation (InvalidOid: none) and this index
// operator class (InvalidOid: the type's default), has a canonical tombstone
// encoding. If not, *why (when why is not null) is set to a sentence saying
// why, for an errdetail.
bool KeyTypeIsCanonical(Oid type, Oid collation, Oid opclass, const char **why);

// Raises unless the relation's primary key can key tombstones: 0A000 for a
// DEFERRABLE primary key, 42804 for a column refused by KeyTypeIsCanonical.
// A table without a primary key passes (its rows leave no tombstones).
void RequireCanonicalRowKey(Relation rel);
void RequireCanonicalRowKeyOf(Oid relid);

// The same check for the guard's writes, remembered for the last relation
// that passed until its relcache entry is invalidated (any DDL on it).
void RequireCanonicalRowKeyCached(Relation rel);
// That invalidation (relid; InvalidOid: every relation), from the module's
// relcache callback.
void ForgetCheckedRowKey(Oid relid);

// A key of rel (just checked by RequireCanonicalRowKeyCached) fits a
// tombstone: when every key column has one width (integers, dates, times,
// uuid, floats, interval), every key of rel has that key's size, and
// RowKeyFitsCached(rel) says so, without building a key, until the same
// invalidation.
void NoteRowKeyFits(Relation rel);
bool RowKeyFitsCached(Relation rel);

// The tombstone key of primary-key values (index column order, column types),
// a text[] of one canonical element per column. Raises for a type without a
// canonical form.
Datum TombstoneKey(int natts, const Oid *types, const Datum *values);

// The size of the entry a tombstone key takes in fencing.row_tombstone's
// primary key (relid, key): as the B-tree would store it now (compressed:
// compressed with default_toast_compression when that makes it smaller), or
// at most, whatever the setting (not compressed); and the most a B-tree entry
// may take (BTMaxItemSize): a larger one cannot be stored.
Size TombstoneIndexTupleSize(Oid home_relid, Datum key, bool compressed);
Size TombstoneIndexTupleLimit();

}  // namespace fencing::pg
