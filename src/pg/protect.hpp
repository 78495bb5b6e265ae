#pragma once

#include "core/policy.hpp"
#include "pg/pg.hpp"

extern "C" {
#include "nodes/pg_list.h"
#include "storage/lockdefs.h"
}

namespace fencing::pg {

// The guard on each guarded relation is an internal trigger. PostgreSQL names
// internal triggers "<name>_<trigger oid>", so guards are recognised by this
// prefix. It sorts after ordinary trigger names: user BEFORE ROW triggers that
// change NEW normally run before the check sees it.
inline constexpr const char *kGuardName = "zz_fencing_guard";
inline constexpr const char *kRecheckName = "zz_fencing_recheck";
// Row scope, tables with a primary key: AFTER UPDATE OF <key columns>.
inline constexpr const char *kMoveRecheckName = "zz_fencing_move_recheck";
bool IsGuardTrigger(const char *tgname);
bool IsRecheckTrigger(const char *tgname);
bool IsMoveRecheckTrigger(const char *tgname);

// The relations that carry guards: the table itself, or every leaf partition.
List *GuardedRelations(Oid relid, LOCKMODE lockmode);

// The decoded policy of the guard on a guarded relation, if it has one.
bool GuardPolicy(Oid leaf, Policy *policy);

// A row of fencing.protected.
struct ProtectedRow {
    Oid relid;
    char token_column[NAMEDATALEN];
    Scope scope;
    char resource_column[NAMEDATALEN];  // empty when none
    char *resource_namespace;           // palloc'd; empty when none
    OnStale on_stale;
    bool strict;
    bool require_token;
};

// Reads fencing.protected (inside an internal session).
bool ReadProtectedRow(Oid relid, ProtectedRow *row);

}  // namespace fencing::pg
