// The guard folder owns the triggers that fence every write to a protected
// table: installing them, judging each row, and keeping them intact.
//
// Installing the guards: the triggers (pg/guard/triggers.hpp) on a protected
// table, or on each leaf partition of a protected partitioned table, made to
// match the table's row in fencing.protected.
#pragma once

#include "core/policy.hpp"
#include "pg/base/pg.hpp"
#include "pg/catalog/policy_store.hpp"

extern "C" {
#include "nodes/pg_list.h"
#include "storage/lockdefs.h"
}

namespace fencing::pg {

// The relations that carry guards: the table itself, or every leaf partition.
List *GuardedRelations(Oid relid, LOCKMODE lockmode);

// The decoded policy of the guard on a guarded relation, if it has one.
bool GuardPolicy(Oid leaf, Policy *policy);
// The same, read from pg_trigger without locking leaf.
bool GuardPolicyUnlocked(Oid leaf, Policy *policy);

// The policy row's guard on leaf judges by: its columns are the leaf's
// token_attnum and (resource scope) resource_attnum.
Policy LeafPolicy(const ProtectedRow &row, int token_attnum, int resource_attnum);

// A column's attnum; 42703 when missing, 42P10 for a system column.
int RequireColumn(Oid relid, const char *column, const char *what);

// A foreign table cannot carry a guard that sees its writes: refused as a
// partition of a fenced table (0A000).
[[noreturn]] void RefuseForeignPartition(Oid relid);

// Makes the guards of relid match its row in fencing.protected (or removes
// them when there is none). Inside an internal session.
void SyncGuards(Oid relid);
// The same after DDL on relid or one of its partitions, for the leaves the
// command touched: a leaf other than relid that this transaction holds no
// lock on is left as it is. The command did not change it, and locking it
// could deadlock with a session that holds it and waits for its parent
// (pg_restore -j: TRUNCATE and COPY of a partition, which locks the parent,
// against ALTER TABLE ONLY parent ADD CONSTRAINT).
void SyncTouchedGuards(Oid relid);

// The relation whose policy fences relid: itself or its nearest protected
// partition ancestor; InvalidOid when none. Inside an internal session.
Oid PolicyHolder(Oid relid, ProtectedRow *row);

// The restored-without-state mark on the guards of relid or of any of its
// leaves (pg/guard/restored.hpp); nullptr when none.
const char *RestoredMark(Oid relid);

// Re-installs relid's guards from its policy: rewriting the row fires
// fencing.protected_sync. Inside an internal session. False when relid has
// no policy.
bool RepairGuards(Oid relid);

}  // namespace fencing::pg
