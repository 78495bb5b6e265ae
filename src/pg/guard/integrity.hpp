// Guard integrity: the guards of a table listed in fencing.protected stay
// installed, enabled and current.
//
//  * Guards are ordinary (not internal) triggers named <prefix>_<relation OID>,
//    so pg_dump dumps them and pg_upgrade (which keeps relation OIDs and
//    attnums) carries them over exactly as they were.
//  * A dumped guard that arrives in a normal restore (new OIDs, maybe new
//    attnums) is replaced by guards installed from the table's policy.
//  * DDL on the guards is refused (ALTER TRIGGER ... RENAME, ALTER TABLE ...
//    DISABLE TRIGGER, CREATE OR REPLACE) or undone (DROP TRIGGER), and no
//    BEFORE ROW trigger that sorts after the guard may be added to a fenced
//    table. Both through the 1.1 event triggers (fencing.on_guard_ddl).
//  * A BEFORE TRUNCATE trigger on every guarded relation: refused on a
//    subscriber that replicates the table; in row scope a tombstone for every
//    row.
//  * fencing.guard_status() / fencing_verify_guards() report and repair.
#pragma once

#include "pg/guard/install.hpp"

namespace fencing::pg {

// Row scope's truncate trigger (tombstones) and the other scopes'. Distinct
// names: fencing.on_partition_drop() tells a dropped row-scope partition by
// its trigger's name once the catalog no longer shows its policy.
inline constexpr const char *kTruncateName = "zz_fencing_truncate";
inline constexpr const char *kTruncateCheckName = "zz_fencing_truncate_check";
bool IsTruncateGuardTrigger(const char *tgname);

// The name of a fencing trigger on a guarded relation: "<prefix>_<leaf OID>".
char *GuardTriggerName(const char *prefix, Oid leaf);

// Raises unless no enabled BEFORE ROW INSERT/UPDATE trigger of leaf sorts
// after the guard (it would run after the check and could change the token):
// checked whenever guards are installed, so a trigger planted before the
// table was fenced is refused too.
void RequireNoLateTrigger(Oid leaf);

// Installs the BEFORE TRUNCATE trigger on a guarded relation (named for its
// scope). A no-op while the 1.0 SQL (without fencing.truncate_guard) is
// installed.
void InstallTruncateGuard(Oid leaf, const ProtectedRow &row);

}  // namespace fencing::pg
