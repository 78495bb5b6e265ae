// The keys folder owns how a write's HWM is keyed: a row by its primary key
// (this file), a deleted row's tombstone by that key's canonical form
// (tombstone_key), a resource by its namespace and name (resource_key).
//
// Row scope: a row is identified by its primary key (tombstones:
// pg/hwm/tombstones.hpp; their canonical key form: pg/keys/tombstone_key.hpp).
#pragma once

#include "pg/base/pg.hpp"
#include "pg/keys/tombstone_key.hpp"

extern "C" {
#include "access/htup.h"
#include "lib/stringinfo.h"
#include "utils/relcache.h"
}

namespace fencing::pg {

// Whether the current user may see these columns' values in an error message
// (PostgreSQL's rule for unique violations): no RLS on the protected table
// home_relid, and SELECT on it or on every one of the columns (attnums of rel).
bool CallerMaySeeColumns(Relation rel, Oid home_relid, const AttrNumber *attnums, int natts);

// "key (id)=(5)", or the row's ctid when the table has no primary key; no
// column names or values when the current user may not read the key.
const char *RowKeyDescription(Relation rel, Oid home_relid, HeapTuple row);

// The canonical primary key of a row (pg/keys/tombstone_key.hpp); false without a
// primary key or with a NULL key column.
bool RowKeyOf(Relation rel, HeapTuple row, Datum *key);

// Primary key columns of a relation; false when it has none.
struct PrimaryKey {
    int natts;
    AttrNumber attnums[INDEX_MAX_KEYS];
};
bool GetPrimaryKey(Relation rel, PrimaryKey *pk);

// Appends "col1 OPERATOR(s.=) $1 AND ..." for the primary key and fills the
// parameter types, one per key column.
void AppendKeyPredicate(StringInfo sql, Relation rel, const PrimaryKey &pk, Oid pkindex,
                        Oid *argtypes);

}  // namespace fencing::pg
