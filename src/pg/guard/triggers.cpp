#include "pg/guard/triggers.hpp"

#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace fencing::pg {
namespace {

bool HasPrefix(const char *tgname, const char *name) {
    size_t n = strlen(name);
    return strncmp(tgname, name, n) == 0 && tgname[n] == '_';
}

}  // namespace

bool IsGuardTrigger(const char *tgname) {
    return HasPrefix(tgname, kGuardName);
}
bool IsRecheckTrigger(const char *tgname) {
    return HasPrefix(tgname, kRecheckName);
}
bool IsMoveRecheckTrigger(const char *tgname) {
    return HasPrefix(tgname, kMoveRecheckName);
}
bool IsTruncateGuardTrigger(const char *tgname) {
    return HasPrefix(tgname, kTruncateName);
}
bool IsFencingTriggerName(const char *tgname) {
    return IsGuardTrigger(tgname) || IsRecheckTrigger(tgname) || IsMoveRecheckTrigger(tgname) ||
           IsTruncateGuardTrigger(tgname);
}

char *GuardTriggerName(const char *prefix, Oid leaf) {
    return psprintf("%s_%u", prefix, leaf);
}

char *TruncateGuardName(Scope scope, Oid leaf) {
    return GuardTriggerName(scope == Scope::kRow ? kTruncateName : kTruncateCheckName, leaf);
}

Oid FencingFunctionOid(const char *name) {
    Oid schema = ExtensionSchemaOid(true);
    if (!OidIsValid(schema))
        return InvalidOid;
    return GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid, CStringGetDatum(name),
                           PointerGetDatum(buildoidvector(nullptr, 0)), ObjectIdGetDatum(schema));
}

FencingFunctions LookupFencingFunctions() {
    return {FencingFunctionOid("guard"), FencingFunctionOid("recheck"),
            FencingFunctionOid("truncate_guard")};
}

bool IsFencingFunction(const FencingFunctions &fns, Oid fn) {
    return OidIsValid(fn) && (fn == fns.guard || fn == fns.recheck || fn == fns.truncate);
}

int ReadTriggers(Oid relid, TriggerInfo **out) {
    Relation tgrel = table_open(TriggerRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(relid));
    SysScanDesc scan = systable_beginscan(tgrel, TriggerRelidNameIndexId, true, nullptr, 1, &key);
    int count = 0, capacity = 8;
    auto *infos = static_cast<TriggerInfo *>(palloc0(sizeof(TriggerInfo) * capacity));
    HeapTuple tup;
    while ((tup = systable_getnext(scan)) != nullptr) {
        auto *t = reinterpret_cast<Form_pg_trigger>(GETSTRUCT(tup));
        if (count == capacity) {
            capacity *= 2;
            infos = static_cast<TriggerInfo *>(repalloc(infos, sizeof(TriggerInfo) * capacity));
        }
        TriggerInfo *info = &infos[count++];
        memset(info, 0, sizeof(*info));
        info->oid = t->oid;
        info->name = t->tgname;
        info->fn = t->tgfoid;
        info->type = t->tgtype;
        info->enabled = t->tgenabled;
        info->internal = t->tgisinternal;
        info->nargs = t->tgnargs;
        bool isnull;
        Datum args = heap_getattr(tup, Anum_pg_trigger_tgargs, RelationGetDescr(tgrel), &isnull);
        if (!isnull) {
            bytea *bytes = DatumGetByteaPP(args);
            const char *p = VARDATA_ANY(bytes);
            const char *end = p + VARSIZE_ANY_EXHDR(bytes);
            for (int i = 0; i < info->nargs && i < 3 && p < end; ++i) {
                info->args[i] = pstrdup(p);
                p += strlen(p) + 1;
            }
        }
    }
    systable_endscan(scan);
    table_close(tgrel, AccessShareLock);
    *out = infos;
    return count;
}

bool TriggerEnabled(const TriggerInfo &t) {
    return t.enabled == TRIGGER_FIRES_ON_ORIGIN || t.enabled == TRIGGER_FIRES_ALWAYS;
}

bool CanChangeRows(int16 type) {
    return TRIGGER_FOR_ROW(type) && TRIGGER_FOR_BEFORE(type) &&
           (TRIGGER_FOR_INSERT(type) || TRIGGER_FOR_UPDATE(type));
}

bool SortsAfterGuard(const char *name) {
    return strcmp(name, kGuardName) > 0;
}

const TriggerInfo *ReadTrigger(Oid relid, const char *name) {
    TriggerInfo *triggers;
    int n = ReadTriggers(relid, &triggers);
    for (int i = 0; i < n; ++i)
        if (strcmp(NameStr(triggers[i].name), name) == 0)
            return &triggers[i];
    return nullptr;
}

[[noreturn]] void RefuseLateTrigger(const char *trigname, Oid relid) {
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("trigger \"%s\" would run after the fencing guard of table %s", trigname,
                           RelName(relid)),
                    errdetail("BEFORE ROW triggers fire in name order; one whose name sorts after "
                              "\"%s\" could change the token after the guard has judged it.",
                              kGuardName),
                    errhint("Choose a name that sorts before \"%s\".", kGuardName)));
}

void RequireNoLateTrigger(Oid leaf) {
    FencingFunctions fns = LookupFencingFunctions();
    TriggerInfo *triggers;
    int n = ReadTriggers(leaf, &triggers);
    for (int i = 0; i < n; ++i) {
        const TriggerInfo &t = triggers[i];
        if (!IsFencingFunction(fns, t.fn) && TriggerEnabled(t) && CanChangeRows(t.type) &&
            SortsAfterGuard(NameStr(t.name)))
            RefuseLateTrigger(NameStr(t.name), leaf);
    }
}

}  // namespace fencing::pg
