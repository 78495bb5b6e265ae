// The hwm folder owns the durable high-water marks: the store of the
// extension's HWM tables, the HWM lock, strict mode's raise registry,
// durable commits, and row scope's tombstones.
//
// The HWM store: every read and write of the extension's own HWM tables
// (fencing.resource_hwm, fencing.table_hwm, fencing.row_tombstone) and of the
// floors' values goes through this API (and, for policy changes, through
// pg/hwm/policy_carry.hpp); no C++ file outside pg/hwm names the HWM tables
// (the extension scripts drop a dropped table's rows in its sql_drop event
// triggers). The floors' policy columns (enabled, idle) are set by
// pg/api/retire.cpp.
//
// Every raise is one atomic step: a conditional UPDATE, or an INSERT ... ON
// CONFLICT for a first write; the HWM row stays locked by the raiser until it
// commits, so a lower concurrent writer waits and is then judged against the
// committed value. Resource and table scope also take the HWM lock
// (pg/hwm/lock.hpp): a writer whose token equals the HWM shares it and locks
// no row, so such writers run in parallel; a raise takes it exclusively and
// so waits for them, and they queue behind it.
#pragma once

#include "core/policy.hpp"
#include "pg/base/pg.hpp"

extern "C" {
#include "access/skey.h"
#include "utils/relcache.h"
}

namespace fencing::pg {

struct HwmVerdict {
    bool admitted;
    Token hwm;           // the HWM the offered token was judged against (when !admitted)
    bool floor = false;  // hwm is the namespace's floor: the key has no entry of its own
};

// Atomic check-and-raise of a shared HWM. Manage their own SPI connection.
// strict: the caller's policy; admission follows JudgeOffer (core/policy.hpp).
HwmVerdict CheckAndRaiseResource(const char *name_space, const char *resource, Token offered,
                                 bool strict);
HwmVerdict CheckAndRaiseTable(Oid home_relid, Token offered, bool strict);
// Tombstones: the HWM a deleted row leaves behind, keyed by its primary key.
// Read with the latest snapshot, whatever the isolation level: through the
// lookup hash index (each candidate rechecked), else the primary key index,
// when row_tombstone has the direct path's shape; else through SPI,
// for which the caller of LookupTombstone (and RaiseTombstone) is inside an
// internal session (pg/base/internal_access.hpp). ReadTombstone opens one itself
// when it needs one.
//
// A key with no tombstone of its own is judged against its table's floor
// (TombstoneFloor) when that is above 0: found, with *hwm the floor and
// *floor (when given) true.
bool LookupTombstone(Oid home_relid, Datum key, Token *hwm, bool *floor = nullptr);
bool ReadTombstone(Oid home_relid, Datum key, Token *hwm, bool *floor = nullptr);
void RaiseTombstone(Oid home_relid, Datum key, Token hwm);
// Waits for every other transaction still writing an entry of index (on rel)
// that matches keys: a dirty-snapshot scan, as the unique check does.
void WaitForIndexWriters(Relation rel, Relation index, ScanKey keys, int nkeys);

// Waits for every other transaction still writing the key's tombstone (a
// dirty-snapshot look at its index entry, as the unique check does; through
// the lookup index, only rows of the key count), and
// returns the tombstone then committed (or written by this transaction): what
// ReadTombstone would read after the wait.
bool TombstoneAfterWriters(Oid home_relid, Datum key, Token *hwm, bool *floor = nullptr);

// Whether row_tombstone holds no version at all under home_relid, seen with
// a dirty snapshot: none committed, none being inserted or deleted by another
// transaction (this transaction's deferred tombstones written first). False
// too when the table is not of the direct path's shape.
bool NoTombstoneStored(Oid home_relid);
// A key known to have no tombstone of its own: judged against the floor, as
// the reads above judge it (false when the floor is 0).
bool UnstoredKeyFloor(Oid home_relid, Token *hwm, bool *floor);

// Floors (retirement folds idle entries into them; they only rise): read with
// the latest snapshot, 0 when there is none (or the extension's SQL predates
// them). A key with no entry of its own is judged against its floor, with the
// rule an entry would get; a floor of 0 judges nothing (nothing retired).
Token ResourceFloor(const char *name_space);
Token TombstoneFloor(Oid home_relid);
// This transaction changed the table floor it may keep (a retirement).
void ForgetTombstoneFloor();
// Whether this transaction keeps a table floor it read (ForgetTombstoneFloor
// has something to forget).
bool KeepsTombstoneFloor();
// Before a step that raises home_relid's floor other than by retirement (an
// ATTACH's merge, a policy change, a transfer, an adoption): waits for every
// writer that keeps the floor it read (a bulk statement's transaction holds
// the floor lock in share mode), and forgets this transaction's own.
void HoldTombstoneFloorForRaise(Oid home_relid);
// Before a table's tombstones are retired: the floor lock in exclusive mode
// (pg/hwm/lock.hpp), waiting for the transactions that keep the floor they
// read (nowait: 55P03 at once when one is running).
void LockFloorForRetirement(Oid home_relid, bool nowait);
// Retirement, one batch each (inside an internal session, the caller's rights
// checked): candidates idle for longer than idle (an interval datum) locked
// FOR UPDATE SKIP LOCKED, deleted, and the floor raised to the highest
// deleted value in the same transaction, which commits durably. A
// namespace's batch takes at most limit resources after *cursor (in order),
// with their lease rows when the lease ended more than idle ago (lease rows
// locked first, as fencing_acquire locks them; a live lease keeps its HWM);
// *done when none is left after. Return how many entries were retired.
// A table's batch takes the tombstones whose key is after *key_cursor (a
// text[]; '{}' first) in key order and moves the cursor past the last one
// looked at: each batch reads only its own part of the primary key, not the
// entries earlier batches deleted, so a retirement is O(entries), not
// O(entries x batches).
int64 RetireTombstoneBatch(Oid home_relid, Datum idle, int64 limit, Datum *key_cursor);
int64 RetireResourceBatch(const char *name_space, Datum idle, int64 limit, char **cursor,
                          bool *done);
// Whether the HWM table of this name (resource_hwm, row_tombstone) records
// when each entry was raised (raised_at): retirement needs it.
bool StoreHasRaisedAt(const char *table);

// Reads, outside a write's check (HWM queries, DDL): the committed state.
// A resource with no HWM of its own reads as its namespace's floor (when
// above 0): the value a write would be judged against.
// ReadResourceHwm reports the namespace's floor for a resource with no entry
// of its own (*from_floor true then).
bool ReadResourceHwm(const char *name_space, const char *resource, Token *hwm,
                     bool *from_floor = nullptr);
bool ReadTableHwm(Oid relid, Token *hwm);
bool HasTombstones(Oid relid);
// The highest table HWM and the highest tombstone stored for any of relids (an
// oid[] datum); false in *has_table / *has_tombstone when there is none.
void MaxStoredHwms(Datum relids, bool *has_table, Token *table_hwm, bool *has_tombstone,
                   Token *tombstone_hwm);

// Holds a table HWM still until this transaction ends, for DDL that carries
// it elsewhere (ATTACH / DETACH PARTITION): waits for every transaction still
// writing its row (a raise in flight: its exclusive HWM lock is gone already),
// then keeps the HWM lock in share mode, so that no raise starts before the
// DDL commits. The committed value it then reads is the last one.
void HoldTableHwm(Oid relid);

// Moving state between relations (ATTACH / DETACH PARTITION): every write
// keeps the higher of the two values, so no HWM goes down.
void MergeTombstones(Datum from_relids, Oid to);
void MergeTableHwm(Oid relid, Token hwm);
void CopyStoredHwms(Oid from, Oid to);
void DropStoredHwms(Datum relids);
// An integer primary key column changing width (ALTER COLUMN ... TYPE, the
// values kept): element position (1-based) of every tombstone key of relid,
// in from_bytes' send form, rewritten in to_bytes' (sign-extended; a value
// that does not fit raises 22003). Elements already in to_bytes' form are
// left. Returns how many keys were rewritten.
int64 RewriteTombstoneIntegerKeys(Oid relid, int position, int from_bytes, int to_bytes);

// Resets (the only way an HWM goes down): delete, log each removed value in
// fencing.reset_log with the caller's name, and log a LOG line; return how
// many were removed. key: a tombstone key, or (Datum)0 for all of relid's.
int64 ResetTombstones(Oid relid, Datum key, const char *target, const char *caller);
int64 ResetResourceHwm(const char *name_space, const char *resource, const char *target,
                       const char *caller);
int64 ResetTableHwm(Oid relid, const char *target, const char *caller);

// Forgets the HWM tables' cached OIDs and shape when relid (InvalidOid: any
// relation) is invalidated; called from the module's relcache callback.
void ForgetStoreTables(Oid relid);

}  // namespace fencing::pg
