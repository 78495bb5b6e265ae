// The fencing triggers as pg_trigger shows them: their names, the functions
// they call, and the rule that no row-changing trigger sorts after the guard.
//
// They are ordinary triggers, so pg_dump and pg_upgrade keep them, named
// "<prefix>_<leaf oid>":
//   zz_fencing_guard          BEFORE ROW INSERT/UPDATE/DELETE: the check
//   zz_fencing_recheck        AFTER ROW INSERT (row scope): racing deletes
//   zz_fencing_move_recheck   AFTER ROW UPDATE OF <key> (row scope): key moves
//   zz_fencing_truncate       BEFORE TRUNCATE (row scope): tombstones
//   zz_fencing_truncate_check BEFORE TRUNCATE (resource, table scope): refused
//                             on a subscriber, as in row scope
// The names sort after ordinary ones: user BEFORE ROW triggers that change NEW
// run before the check sees it, and none may sort after it.
#pragma once

#include "core/policy.hpp"
#include "pg/base/pg.hpp"

namespace fencing::pg {

inline constexpr const char *kGuardName = "zz_fencing_guard";
inline constexpr const char *kRecheckName = "zz_fencing_recheck";
inline constexpr const char *kMoveRecheckName = "zz_fencing_move_recheck";
// Distinct names for the truncate triggers: fencing.on_partition_drop() tells
// a dropped row-scope partition by its trigger's name once the catalog no
// longer shows its policy.
inline constexpr const char *kTruncateName = "zz_fencing_truncate";
inline constexpr const char *kTruncateCheckName = "zz_fencing_truncate_check";

bool IsGuardTrigger(const char *tgname);
bool IsRecheckTrigger(const char *tgname);
bool IsMoveRecheckTrigger(const char *tgname);
bool IsTruncateGuardTrigger(const char *tgname);
bool IsFencingTriggerName(const char *tgname);

// The name of a fencing trigger on a guarded relation: "<prefix>_<leaf OID>".
char *GuardTriggerName(const char *prefix, Oid leaf);
// The truncate trigger's name on leaf for its scope.
char *TruncateGuardName(Scope scope, Oid leaf);

// fencing.<name>() with no arguments; InvalidOid when the installed
// extension script does not define it. Read from the catalog, not looked up
// by name: the caller may lack USAGE on fencing.
Oid FencingFunctionOid(const char *name);

struct FencingFunctions {
    Oid guard;
    Oid recheck;
    Oid truncate;
};
FencingFunctions LookupFencingFunctions();
bool IsFencingFunction(const FencingFunctions &fns, Oid fn);

// One row of pg_trigger, as far as the guards care.
struct TriggerInfo {
    Oid oid;
    NameData name;
    Oid fn;
    int16 type;
    char enabled;
    bool internal;
    int nargs;
    char *args[3];  // the guard's policy, namespace, restored-without-state mark
};

// The triggers of a relation, read from pg_trigger (no lock on the relation).
int ReadTriggers(Oid relid, TriggerInfo **out);
// The relation's trigger of that name; nullptr when there is none.
const TriggerInfo *ReadTrigger(Oid relid, const char *name);

// Fires for this server's sessions (ENABLE or ENABLE ALWAYS).
bool TriggerEnabled(const TriggerInfo &t);
// A BEFORE ROW trigger on INSERT or UPDATE can change the token column.
bool CanChangeRows(int16 type);
// Triggers fire in name order (bytewise): one named after the guard runs
// after the check and could change the token it judged.
bool SortsAfterGuard(const char *name);

[[noreturn]] void RefuseLateTrigger(const char *trigname, Oid relid);

// Raises unless no enabled BEFORE ROW INSERT/UPDATE trigger of leaf sorts
// after the guard: checked whenever guards are installed, so a trigger
// planted before the table was fenced is refused too.
void RequireNoLateTrigger(Oid leaf);

}  // namespace fencing::pg
