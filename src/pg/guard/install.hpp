// Installing the guards: the triggers that fence a protected table (or each
// leaf partition of a protected partitioned table). They are ordinary
// triggers, so pg_dump and pg_upgrade keep them, named "<prefix>_<leaf oid>":
//   zz_fencing_guard         BEFORE ROW INSERT/UPDATE/DELETE: the check
//   zz_fencing_recheck       AFTER ROW INSERT (row scope): racing deletes
//   zz_fencing_move_recheck  AFTER ROW UPDATE OF <key> (row scope): key moves
//   zz_fencing_truncate      BEFORE TRUNCATE (row scope): tombstones
//   zz_fencing_truncate_check BEFORE TRUNCATE (resource, table scope): refused
//                            on a subscriber, as in row scope
// The names sort after ordinary ones: user BEFORE ROW triggers that change NEW
// run before the check sees it (and none may sort after it:
// pg/guard/integrity.hpp).
#pragma once

#include "core/policy.hpp"
#include "pg/base/pg.hpp"
#include "pg/catalog/policy_store.hpp"

extern "C" {
#include "nodes/pg_list.h"
#include "storage/lockdefs.h"
}

namespace fencing::pg {

inline constexpr const char *kGuardName = "zz_fencing_guard";
inline constexpr const char *kRecheckName = "zz_fencing_recheck";
inline constexpr const char *kMoveRecheckName = "zz_fencing_move_recheck";
bool IsGuardTrigger(const char *tgname);
bool IsRecheckTrigger(const char *tgname);
bool IsMoveRecheckTrigger(const char *tgname);

// The relations that carry guards: the table itself, or every leaf partition.
List *GuardedRelations(Oid relid, LOCKMODE lockmode);

// The decoded policy of the guard on a guarded relation, if it has one.
bool GuardPolicy(Oid leaf, Policy *policy);

// A column's attnum; 42703 when missing, 42P10 for a system column.
int RequireColumn(Oid relid, const char *column, const char *what);

// A foreign table cannot carry a guard that sees its writes: refused as a
// partition of a fenced table (0A000).
[[noreturn]] void RefuseForeignPartition(Oid relid);

// Makes the guards of relid match its row in fencing.protected (or removes
// them when there is none). Inside an internal session.
void SyncGuards(Oid relid);

}  // namespace fencing::pg
