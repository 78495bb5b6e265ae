// The HWM store (pg/hwm/store.hpp) outside a write's check: reads for the
// HWM queries and DDL, moving state between relations (ATTACH / DETACH
// PARTITION), drops, and resets.
#include "pg/catalog/subscriber.hpp"
#include "pg/hwm/durability.hpp"
#include "pg/hwm/lock.hpp"
#include "pg/hwm/store.hpp"
#include "pg/hwm/store_shape.hpp"
#include "pg/hwm/writers.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
}

namespace fencing::pg {
namespace hwm {

// Runs a fixed statement (inside an internal session) with the latest
// snapshot, not the transaction's: DDL carrying state from one relation to
// another must read what committed before it got its locks, also under
// REPEATABLE READ (as LookupTombstone).
uint64 RunLatest(const char *sql, int nargs, Oid *types, Datum *values) {
    SPIPlanPtr plan = SPI_prepare(sql, nargs, types);
    if (plan == nullptr)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("fencing: could not prepare internal statement: %s",
                               SPI_result_code_string(SPI_result))));
    int rc = SPI_execute_snapshot(plan, values, nullptr, GetLatestSnapshot(), InvalidSnapshot,
                                  false, false, 0);
    if (rc < 0)
        ereport(ERROR,
                (errcode(ERRCODE_INTERNAL_ERROR),
                 errmsg("fencing: internal statement failed: %s", SPI_result_code_string(rc))));
    SPI_freeplan(plan);
    return SPI_processed;
}

// The first row's first column as int8, when there is a row and it is not NULL.
bool FirstInt8NotNull(Token *out) {
    if (SPI_processed == 0)
        return false;
    bool isnull;
    Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    if (isnull)
        return false;
    *out = DatumGetInt64(d);
    return true;
}

}  // namespace hwm

namespace {

using hwm::FirstInt8NotNull;
using hwm::RunLatest;

// Deletes HWM rows and logs each one with the calling user (captured before
// the internal session switched the user id); returns how many were removed.
int64 ResetAndLog(const char *delete_sql, int nargs, Oid *types, Datum *values, const char *target,
                  const char *caller) {
    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfo(
        &sql,
        "WITH gone AS (%s) INSERT INTO fencing.reset_log (reset_by, target, key, old_hwm)"
        " SELECT %s::pg_catalog.name, %s::pg_catalog.text, gone.key, gone.hwm FROM gone",
        delete_sql, quote_literal_cstr(caller), quote_literal_cstr(target));
    RunInternalSql(sql.data, nargs, types, values, nullptr, false);
    int64 removed = static_cast<int64>(SPI_processed);
    ereport(LOG, (errmsg("fencing_reset: %s removed " INT64_FORMAT " high-water mark(s) of %s",
                         caller, removed, target)));
    return removed;
}

// ResetAndLog of a delete whose one parameter is the relid.
int64 ResetOfRelid(const char *delete_sql, Oid relid, const char *target, const char *caller) {
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    return ResetAndLog(delete_sql, 1, types, values, target, caller);
}

// Tombstone floors (retirement) move, merge and go with their tables'
// tombstones; absent while the extension's SQL predates them.
bool HasTombstoneFloors() {
    return OidIsValid(hwm::StoreRelid("tombstone_floor"));
}

// The highest floor of from_relids into to's floor (created disabled: the
// floor judges, retirement stays off until its owner opts in). Never lowers.
void MergeTombstoneFloors(Datum from_relids, Oid to) {
    if (!HasTombstoneFloors())
        return;
    HoldTombstoneFloorForRaise(to);
    Oid types[] = {OIDOID, OIDARRAYOID};
    Datum values[] = {ObjectIdGetDatum(to), from_relids};
    RunLatest(
        "INSERT INTO fencing.tombstone_floor AS f (relid, floor, enabled)"
        " SELECT $1, pg_catalog.max(floor), false FROM fencing.tombstone_floor"
        "  WHERE relid OPERATOR(pg_catalog.=) ANY ($2)"
        " HAVING pg_catalog.max(floor) OPERATOR(pg_catalog.>) 0"
        " ON CONFLICT (relid) DO UPDATE SET floor = GREATEST(f.floor, excluded.floor)",
        2, types, values);
}

}  // namespace

bool ReadResourceHwm(const char *name_space, const char *resource, Token *hwm, bool *from_floor) {
    Oid types[] = {TEXTOID, TEXTOID};
    Datum values[] = {CStringGetTextDatum(name_space), CStringGetTextDatum(resource)};
    RunInternalSql(
        "SELECT hwm FROM fencing.resource_hwm WHERE namespace OPERATOR(pg_catalog.=) $1"
        " AND resource OPERATOR(pg_catalog.=) $2",
        2, types, values, nullptr, true);
    bool own = FirstInt8NotNull(hwm);
    if (from_floor != nullptr)
        *from_floor = !own;
    if (own)
        return true;
    *hwm = ResourceFloor(name_space);
    return *hwm > 0;
}

bool ReadTableHwm(Oid relid, Token *hwm) {
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    RunInternalSql("SELECT hwm FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) $1", 1,
                   types, values, nullptr, true);
    return FirstInt8NotNull(hwm);
}

bool HasTombstones(Oid relid) {
    Oid types[] = {OIDOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    return RunInternalSql(
               "SELECT 1 FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) $1 LIMIT 1",
               1, types, values, nullptr, true) > 0;
}

void MaxStoredHwms(Datum relids, bool *has_table, Token *table_hwm, bool *has_tombstone,
                   Token *tombstone_hwm) {
    Oid types[] = {OIDARRAYOID};
    Datum values[] = {relids};
    RunLatest(
        "SELECT (SELECT pg_catalog.max(hwm) FROM fencing.table_hwm"
        "         WHERE relid OPERATOR(pg_catalog.=) ANY ($1)),"
        "       (SELECT pg_catalog.max(hwm) FROM fencing.row_tombstone"
        "         WHERE relid OPERATOR(pg_catalog.=) ANY ($1))",
        1, types, values);
    // A tombstone floor stands for the tombstones retired into it.
    Token floor = 0;
    if (HasTombstoneFloors()) {
        RunLatest(
            "SELECT pg_catalog.max(floor) FROM fencing.tombstone_floor"
            " WHERE relid OPERATOR(pg_catalog.=) ANY ($1)"
            "   AND floor OPERATOR(pg_catalog.>) 0",
            1, types, values);
        bool isnull;
        Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
        floor = isnull ? 0 : DatumGetInt64(d);
    }
    RunLatest(
        "SELECT (SELECT pg_catalog.max(hwm) FROM fencing.table_hwm"
        "         WHERE relid OPERATOR(pg_catalog.=) ANY ($1)),"
        "       (SELECT pg_catalog.max(hwm) FROM fencing.row_tombstone"
        "         WHERE relid OPERATOR(pg_catalog.=) ANY ($1))",
        1, types, values);
    bool table_null, tombstone_null;
    *table_hwm =
        DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &table_null));
    *tombstone_hwm = DatumGetInt64(
        SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &tombstone_null));
    *has_table = !table_null;
    *has_tombstone = !tombstone_null || floor > 0;
    if (floor > 0 && (tombstone_null || floor > *tombstone_hwm))
        *tombstone_hwm = floor;
}

void MergeTombstones(Datum from_relids, Oid to) {
    Oid types[] = {OIDOID, OIDARRAYOID};
    Datum values[] = {ObjectIdGetDatum(to), from_relids};
    RunLatest(
        "INSERT INTO fencing.row_tombstone AS t (relid, key, hwm)"
        " SELECT $1, key, pg_catalog.max(hwm) FROM fencing.row_tombstone"
        "  WHERE relid OPERATOR(pg_catalog.=) ANY ($2) GROUP BY key"
        " ON CONFLICT (relid, key) DO UPDATE SET hwm = GREATEST(t.hwm, excluded.hwm)",
        2, types, values);
    // A key retired in one of the tables (to's included) is judged against
    // the merged floor while it has no tombstone; a tombstone of the other
    // table's below that floor would lower it: every tombstone of to's is
    // raised to the merged floor (conservative: it only rises).
    MergeTombstoneFloors(from_relids, to);
    if (HasTombstoneFloors()) {
        Oid ftypes[] = {OIDOID};
        Datum fvalues[] = {ObjectIdGetDatum(to)};
        RunLatest(
            "UPDATE fencing.row_tombstone t SET hwm = f.floor FROM fencing.tombstone_floor f"
            " WHERE f.relid OPERATOR(pg_catalog.=) $1 AND t.relid OPERATOR(pg_catalog.=) $1"
            "   AND t.hwm OPERATOR(pg_catalog.<) f.floor",
            1, ftypes, fvalues);
    }
    NoteHwmRaised();
}

void MergeTableHwm(Oid relid, Token hwm) {
    Oid types[] = {OIDOID, INT8OID};
    Datum values[] = {ObjectIdGetDatum(relid), Int64GetDatum(hwm)};
    // A raise like any other: ATTACH PARTITION does not stop the table's
    // writers, so it waits for those admitted at the HWM (pg/hwm/lock.hpp).
    LOCKTAG tag;
    TableHwmLockTag(&tag, relid);
    LockHwmExclusive(&tag);
    RunInternalSql(
        "INSERT INTO fencing.table_hwm AS t (relid, hwm) VALUES ($1, $2)"
        " ON CONFLICT (relid) DO UPDATE SET hwm = GREATEST(t.hwm, excluded.hwm)",
        2, types, values, nullptr, false);
    UnlockHwmExclusive(&tag);
    NoteHwmRaised();
}

void CopyStoredHwms(Oid from, Oid to) {
    Oid types[] = {OIDOID, OIDOID};
    Datum values[] = {ObjectIdGetDatum(from), ObjectIdGetDatum(to)};
    RunLatest(
        "INSERT INTO fencing.row_tombstone AS t (relid, key, hwm)"
        " SELECT $2, key, hwm FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) $1"
        " ON CONFLICT (relid, key) DO UPDATE SET hwm = GREATEST(t.hwm, excluded.hwm)",
        2, types, values);
    RunLatest(
        "INSERT INTO fencing.table_hwm AS t (relid, hwm)"
        " SELECT $2, hwm FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) $1"
        " ON CONFLICT (relid) DO UPDATE SET hwm = GREATEST(t.hwm, excluded.hwm)",
        2, types, values);
    Datum source[] = {ObjectIdGetDatum(from)};
    MergeTombstoneFloors(
        PointerGetDatum(construct_array(source, 1, OIDOID, sizeof(Oid), true, TYPALIGN_INT)), to);
    NoteHwmRaised();
}

void DropStoredHwms(Datum relids) {
    Oid types[] = {OIDARRAYOID};
    Datum values[] = {relids};
    RunInternalSql("DELETE FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) ANY ($1)",
                   1, types, values, nullptr, false);
    RunInternalSql("DELETE FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) ANY ($1)", 1,
                   types, values, nullptr, false);
    if (HasTombstoneFloors())
        RunInternalSql(
            "DELETE FROM fencing.tombstone_floor WHERE relid OPERATOR(pg_catalog.=) ANY ($1)", 1,
            types, values, nullptr, false);
}

int64 ResetTombstones(Oid relid, Datum key, const char *target, const char *caller) {
    RefuseResetOnSubscriber("row_tombstone", "reset tombstones");
    // The whole table: its floor too (logged under the key "(floor)"), and
    // with it the retirement opt-in. One key: its tombstone only; the key is
    // then judged against the floor, as every key without one.
    if (key == (Datum)0) {
        int64 removed = ResetOfRelid(
            "DELETE FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) $1"
            " RETURNING key::pg_catalog.text AS key, hwm",
            relid, target, caller);
        if (HasTombstoneFloors())
            removed += ResetOfRelid(
                "DELETE FROM fencing.tombstone_floor WHERE relid OPERATOR(pg_catalog.=) $1"
                " RETURNING '(floor)'::pg_catalog.text AS key, floor AS hwm",
                relid, target, caller);
        return removed;
    }
    Oid types[] = {OIDOID, TEXTARRAYOID};
    Datum values[] = {ObjectIdGetDatum(relid), key};
    return ResetAndLog(
        "DELETE FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) $1"
        " AND key OPERATOR(pg_catalog.=) $2 RETURNING key::pg_catalog.text AS key, hwm",
        2, types, values, target, caller);
}

int64 ResetResourceHwm(const char *name_space, const char *resource, const char *target,
                       const char *caller) {
    RefuseResetOnSubscriber("resource_hwm", "reset a resource's high-water mark");
    Oid types[] = {TEXTOID, TEXTOID};
    Datum values[] = {CStringGetTextDatum(name_space), CStringGetTextDatum(resource)};
    return ResetAndLog(
        "DELETE FROM fencing.resource_hwm WHERE namespace OPERATOR(pg_catalog.=) $1"
        " AND resource OPERATOR(pg_catalog.=) $2 RETURNING resource AS key, hwm",
        2, types, values, target, caller);
}

int64 ResetTableHwm(Oid relid, const char *target, const char *caller) {
    RefuseResetOnSubscriber("table_hwm", "reset a table's high-water mark");
    return ResetOfRelid(
        "DELETE FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) $1"
        " RETURNING NULL::pg_catalog.text AS key, hwm",
        relid, target, caller);
}

void HoldTableHwm(Oid relid) {
    LOCKTAG tag;
    TableHwmLockTag(&tag, relid);
    Datum key[] = {ObjectIdGetDatum(relid)};
    hwm::DirectAccess a;
    if (!hwm::OpenDirectHeap(&hwm::table_direct, AccessShareLock, key, &a)) {
        // Every raise of this shape takes the lock exclusively until its
        // statements are done (CheckAndRaiseViaSpi): share it, then wait for
        // those that let it go and have not committed yet.
        LockHwmShared(&tag);
        hwm::WaitForAllWriters(&hwm::table_direct);
        return;
    }
    hwm::LockWhenNoWriter(&a, &tag, LockHwmShared, UnlockHwmShared);
    hwm::CloseDirect(&a);
}

int64 RewriteTombstoneIntegerKeys(Oid relid, int position, int from_bytes, int to_bytes) {
    // Hex digits: the sign is the top bit of the first digit (8-f).
    int from_digits = 2 * from_bytes, extra = 2 * (to_bytes - from_bytes);
    Oid types[] = {OIDOID, INT4OID, INT4OID, INT4OID};
    Datum values[] = {ObjectIdGetDatum(relid), Int32GetDatum(position),
                      Int32GetDatum(from_digits), Int32GetDatum(extra > 0 ? extra : -extra)};
    if (extra < 0) {
        // Narrowing: the dropped digits must all repeat the kept sign.
        RunLatest(
            "SELECT 1 FROM fencing.row_tombstone WHERE relid OPERATOR(pg_catalog.=) $1"
            " AND pg_catalog.length(key[$2]) OPERATOR(pg_catalog.=) $3 AND NOT ("
            "  (pg_catalog.\"left\"(key[$2], $4) OPERATOR(pg_catalog.=) pg_catalog.repeat('0', $4)"
            "   AND pg_catalog.substr(key[$2], $4 OPERATOR(pg_catalog.+) 1, 1)"
            "       COLLATE pg_catalog.\"C\" OPERATOR(pg_catalog.<) '8')"
            "  OR (pg_catalog.\"left\"(key[$2], $4) OPERATOR(pg_catalog.=) pg_catalog.repeat('f', $4)"
            "   AND pg_catalog.substr(key[$2], $4 OPERATOR(pg_catalog.+) 1, 1)"
            "       COLLATE pg_catalog.\"C\" OPERATOR(pg_catalog.>=) '8')) LIMIT 1",
            4, types, values);
        if (SPI_processed > 0)
            ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                            errmsg("a tombstone's key of %s is out of range for the new type",
                                   RelName(relid)),
                            errdetail("Its deleted row's key would not fit the column any more."),
                            errhint("Keep a type that holds every deleted key.")));
        return RunLatest(
            "UPDATE fencing.row_tombstone SET key[$2] = pg_catalog.substr(key[$2],"
            " $4 OPERATOR(pg_catalog.+) 1)"
            " WHERE relid OPERATOR(pg_catalog.=) $1"
            " AND pg_catalog.length(key[$2]) OPERATOR(pg_catalog.=) $3",
            4, types, values);
    }
    return RunLatest(
        "UPDATE fencing.row_tombstone SET key[$2] = pg_catalog.repeat(CASE WHEN"
        " pg_catalog.\"left\"(key[$2], 1) COLLATE pg_catalog.\"C\" OPERATOR(pg_catalog.>=) '8'"
        " THEN 'f' ELSE '0' END, $4) OPERATOR(pg_catalog.||) key[$2]"
        " WHERE relid OPERATOR(pg_catalog.=) $1"
        " AND pg_catalog.length(key[$2]) OPERATOR(pg_catalog.=) $3",
        4, types, values);
}

}  // namespace fencing::pg
