// Row scope: a row is identified by its primary key. A deleted row leaves a
// tombstone (its HWM) under that key, so a stale writer cannot re-INSERT it.
#pragma once

#include "core/token.hpp"
#include "pg/pg.hpp"
#include "pg/tombstone_key.hpp"

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

// The tombstone HWM for the row's key, if any, read with the latest snapshot
// whatever the isolation level. False when the table has no primary key, a
// key column is NULL, or there is no tombstone.
//
// A DELETE of the key that is still in flight is invisible here; the INSERT
// then waits for it on the primary key index, and the AFTER INSERT recheck
// (fencing.recheck) reads the tombstone again once that wait is over.
bool RowTombstone(Relation rel, Oid home_relid, HeapTuple new_row, Token *hwm);

// Before an UPDATE moves a row onto a new primary key: waits for every
// transaction still writing a row with that key (an uncommitted INSERT or
// DELETE), so the tombstone read afterwards includes what they committed.
void WaitForKeyWriters(Relation rel, HeapTuple new_row);

// The canonical primary key of a row (pg/tombstone_key.hpp); false without a
// primary key or with a NULL key column.
bool RowKeyOf(Relation rel, HeapTuple row, Datum *key);

// Records (or raises) the tombstone for a deleted row. No-op without a primary key.
void LeaveTombstone(Relation rel, Oid home_relid, HeapTuple old_row, Token hwm);

// Resource scope keys HWMs by the resource value's text. Only types whose text
// form is canonical for their equality qualify: text, varchar, name, integers,
// oid, uuid, bool, numeric (normalized), enums and fencing_token. Not
// timestamptz or date (their text follows TimeZone/DateStyle), float, char(n)
// (padding) or case-insensitive types.
bool ResourceTypeIsCanonical(Oid type);
char *ResourceKeyText(Oid type, Datum value);

// Primary key columns of a relation; false when it has none.
struct PrimaryKey {
    int natts;
    AttrNumber attnums[32];
};
bool GetPrimaryKey(Relation rel, PrimaryKey *pk);

// Appends "col1 OPERATOR(s.=) $1 AND ..." for the primary key and fills the
// parameter types, one per key column.
void AppendKeyPredicate(StringInfo sql, Relation rel, const PrimaryKey &pk, Oid pkindex,
                        Oid *argtypes);

}  // namespace fencing::pg
