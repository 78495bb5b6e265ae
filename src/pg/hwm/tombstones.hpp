// Row scope: a deleted row leaves a tombstone (its HWM) under its primary
// key, so a stale writer cannot re-INSERT it or move a row onto it.
#pragma once

#include "core/token.hpp"
#include "pg/base/pg.hpp"

extern "C" {
#include "access/htup.h"
#include "utils/relcache.h"
}

namespace fencing::pg {

// The tombstone HWM for the row's key, if any, read with the latest snapshot
// whatever the isolation level. False when the table has no primary key, a
// key column is NULL, or there is no tombstone.
//
// A DELETE of the key that is still in flight is invisible here; the INSERT
// then waits for it on the primary key index, and the AFTER INSERT recheck
// (fencing.recheck) reads the tombstone again once that wait is over.
bool RowTombstone(Relation rel, Oid home_relid, HeapTuple new_row, Token *hwm,
                  bool *floor = nullptr);

// RowTombstone's refusal of a key too long for a tombstone (54000), without
// the read: for an INSERT whose tombstone the AFTER INSERT recheck judges.
void RequireRowKeyFits(Relation rel, Oid home_relid, HeapTuple new_row);

// Before an UPDATE moves a row onto a new primary key: waits for every
// transaction still writing a row with that key (an uncommitted INSERT or
// DELETE), so the tombstone read afterwards includes what they committed.
void WaitForKeyWriters(Relation rel, HeapTuple new_row);
// The same for primary-key values (index column order).
void WaitForKeyWritersOf(Relation rel, const Datum *values);

// Whether a row of the key (values in rel's primary key order; rel may be
// partitioned) is visible to the latest snapshot, whatever the caller's
// snapshot or row-level security would show. Reads the primary key indexes
// only: no SQL, no policy runs.
bool KeyHasLatestRow(Relation rel, const Datum *values);

// RowTombstone after waiting for every transaction still writing the key's
// tombstone (an in-flight DELETE or fencing_advance()), so a tombstone
// committed by it is seen: the rechecks after an INSERT or a key move.
bool RowTombstoneAfterWriters(Relation rel, Oid home_relid, HeapTuple row, Token *hwm,
                              bool *floor = nullptr);

// Raises 54000, naming the table and its key columns, unless the tombstone
// key fits fencing.row_tombstone's primary key: as it would be stored now
// (compressed), or whatever the compression setting (not). Keys coming in
// (INSERT, a key move's new key, fencing_advance(), and every existing row at
// fencing_protect() and auto-protection: RequireTombstoneKeysFitRows) must fit
// uncompressed, so that their tombstone can always be left; leaving one
// (DELETE, TRUNCATE, a key move's old key) needs it to fit as stored.
void RequireTombstoneKeyFits(Relation rel, Oid home_relid, Datum key, bool compressed);
void RequireTombstoneKeysFitRows(Oid relid);

// Records (or raises) the tombstone for a deleted row. No-op without a primary key.
// deferrable (a DELETE): to the end of the executor run deleting it, with the
// statement's other rows (pg/hwm/removed_rows.hpp).
void LeaveTombstone(Relation rel, Oid home_relid, HeapTuple old_row, Token hwm,
                    bool deferrable = false);

// Records (or raises) a tombstone under home_relid for every row of rel (a
// leaf) that carries a token, read with the latest snapshot, as a DELETE of
// each would: for TRUNCATE and for DDL that takes the rows out of the home's
// tree (DROP or DETACH of a partition). The caller holds a lock on rel that
// keeps every writer out. A row whose token is NULL carries no HWM, and a
// tombstone already stored for its key is kept, so skipping it loses nothing.
// Set-based, or folded into the table's floor (pg/hwm/removed_rows.hpp).
// Returns how many rows it read; *every_row (when not null) false when a fold
// took the highest token from an index ordered by token instead of reading
// every row.
int64 TombstoneEveryRow(Relation rel, Oid home_relid, AttrNumber token_attnum,
                        bool *every_row = nullptr);

// Whether a row of rel (a table about to be attached under home_relid) is
// below what home_relid records for its key: its tombstone, or the floor the
// key is judged against without one; a row whose token is NULL is below any.
// The first such row's token (*has_token false when NULL) and that HWM in
// *offered and *hwm (*floor: the floor's). Read with the latest snapshot; the
// caller holds a lock on rel that keeps every writer out. A rel without a
// primary key that has any row is refused too (*unkeyed): its rows cannot be
// looked up by key. tombstones_only: only a tombstone counts, not the floor,
// and a rel without a primary key is never below (a table that replaces a
// dropped or swapped-out one: its rows were judged by the floor already).
// A caller may name the keys the old table still holds (old_has_key, with
// arg): a row exactly at its key's tombstone whose key the old table lacks is
// below too (a DELETE at the row's own token after the copy).
struct OldKeys {
    bool (*has_key)(void *arg, uint64 key_hash);
    void *arg;
};
// The hash of a canonical key (0 is never returned), as OldKeys takes it.
uint64 KeyHash(Datum key);
bool RowBelowTombstone(Relation rel, Oid home_relid, AttrNumber token_attnum, bool *has_token,
                       Token *offered, Token *hwm, bool *floor, bool *unkeyed,
                       bool tombstones_only = false,
                       const OldKeys *old_keys = nullptr);

}  // namespace fencing::pg

namespace fencing::pg {

// Calls add(arg, key, key_hash, token) for every row of rel (a leaf) whose
// token is not NULL, read with the latest snapshot: key is the row's canonical
// primary key (valid during the call) and key_hash a 64-bit hash of it, or
// both 0 when keyed is false or rel has none. The caller holds a lock on rel
// that keeps every writer out.
void ForEachRowToken(Relation rel, AttrNumber token_attnum, bool keyed,
                     void (*add)(void *arg, Datum key, uint64 key_hash, Token token), void *arg);

}  // namespace fencing::pg
