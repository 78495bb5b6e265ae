// Policy changes carry every HWM across or are refused (pg/hwm/policy_carry.hpp).
//
//   from \ to   row                       table                  resource
//   row         column switch: each row's  table HWM raised to    each row's token raised
//               new token >= its old one,  max(row tokens,        into its resource's HWM;
//               else refused               tombstones, floor)     refused with tombstones
//   table       each row's token >= the    (column: nothing)      refused when the table HWM
//               table HWM, else refused;                          is above the namespace's
//               tombstones and the floor                          floor
//               raised to it
//   resource    each row's token >= its    table HWM raised to    namespace switch: the old
//               resource's HWM, else       the namespace's        one's HWMs raised into the
//               refused; tombstones and    highest HWM or floor   new one; column switch
//               the floor raised to the                           refused while the namespace
//               namespace's highest                               holds HWMs
#include "pg/hwm/policy_carry.hpp"

#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/hwm/lock.hpp"
#include "pg/hwm/store.hpp"
#include "pg/hwm/store_sql.hpp"
#include "pg/keys/resource_key.hpp"

extern "C" {
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

namespace fencing::pg {
namespace {

const char *PolicyText(const ProtectedRow &p) {
    switch (p.scope) {
        case Scope::kRow:
            return psprintf("row scope on token column \"%s\"", p.token_column);
        case Scope::kTable:
            return psprintf("table scope (token column \"%s\")", p.token_column);
        case Scope::kResource:
            return psprintf("resource scope on column \"%s\" in namespace '%s'", p.resource_column,
                            p.resource_namespace);
    }
    return "";
}

[[noreturn]] void RefuseChange(const ProtectedRow &from, const ProtectedRow &to, const char *why,
                               const char *detail, const char *hint) {
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("cannot change the policy of fenced table %s from %s to %s: %s",
                    RelName(from.relid), PolicyText(from), PolicyText(to), why),
             errdetail_internal("%s", detail),
             errhint("%s Lowering high-water marks on purpose is fencing_reset(), logged in "
                     "fencing.reset_log.",
                     hint)));
    pg_unreachable();
}

// The first row (if any) of the table (its partitions included) below what
// it was judged by under from, SQL over the table as the extension's owner
// with the latest snapshot (the caller's locks keep writers out). judged:
// the expression of what a row was judged by ($1: a bound HWM); n: the
// new token column. *below_null: the row's new token is NULL.
bool FirstRowBelow(Oid relid, const char *judged, const char *new_column, Token bound,
                   Token *row_token, bool *row_null, Token *hwm) {
    const char *n = quote_identifier(new_column);
    char *sql = psprintf(
        "SELECT j, t FROM (SELECT (%s)::pg_catalog.int8 AS j, %s::pg_catalog.int8 AS t"
        " FROM %s) s WHERE j IS NOT NULL AND (t IS NULL OR t OPERATOR(pg_catalog.<) j) LIMIT 1",
        judged, n, RelName(relid));
    Oid types[] = {INT8OID};
    Datum values[] = {Int64GetDatum(bound)};
    if (hwm::RunLatest(sql, 1, types, values) == 0)
        return false;
    bool isnull;
    *hwm = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    Datum t = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, row_null);
    *row_token = *row_null ? 0 : DatumGetInt64(t);
    return true;
}

// The highest value of column over the table's rows (false: none).
bool MaxColumn(Oid relid, const char *column, Token *max) {
    char *sql = psprintf("SELECT pg_catalog.max(%s::pg_catalog.int8) FROM %s",
                         quote_identifier(column), RelName(relid));
    hwm::RunLatest(sql, 0, nullptr, nullptr);
    return hwm::FirstInt8NotNull(max);
}

// The highest HWM of a namespace, its floor included (false: none).
bool MaxNamespaceHwm(const char *name_space, Token *max) {
    Oid types[] = {TEXTOID};
    Datum values[] = {CStringGetTextDatum(name_space)};
    hwm::RunLatest(
        "SELECT pg_catalog.max(hwm) FROM fencing.resource_hwm"
        " WHERE namespace OPERATOR(pg_catalog.=) $1",
        1, types, values);
    bool found = hwm::FirstInt8NotNull(max);
    Token floor = ResourceFloor(name_space);
    if (floor > 0 && (!found || floor > *max)) {
        *max = floor;
        found = true;
    }
    return found;
}

// Resource HWMs are raised by any table of the namespace and by
// fencing_resource_advance(), none of which locks this table: no raise in
// any namespace commits between the read of from's state and the change's
// commit (retirement's DELETE waits too).
void HoldResourceHwms() {
    RunInternalSql("LOCK TABLE fencing.resource_hwm IN SHARE MODE", 0, nullptr, nullptr, nullptr,
                   false);
}

// Tombstones below hwm raised to it, and the floor (created disabled:
// retirement stays off until the owner opts in) to at least hwm: every key
// of the table, deleted or never seen, is then judged at least at hwm.
void RaiseTombstonesTo(Oid relid, Token hwm) {
    HoldTombstoneFloorForRaise(relid);
    Oid types[] = {OIDOID, INT8OID};
    Datum values[] = {ObjectIdGetDatum(relid), Int64GetDatum(hwm)};
    RunInternalSql(
        "UPDATE fencing.row_tombstone SET hwm = $2"
        " WHERE relid OPERATOR(pg_catalog.=) $1 AND hwm OPERATOR(pg_catalog.<) $2",
        2, types, values, nullptr, false);
    RunInternalSql(
        "INSERT INTO fencing.tombstone_floor AS f (relid, floor, enabled) VALUES ($1, $2, false)"
        " ON CONFLICT (relid) DO UPDATE SET floor = GREATEST(f.floor, excluded.floor)",
        2, types, values, nullptr, false);
}

// Calls visit(leaf, slot) for every row of relid's leaves, with the latest
// snapshot (the caller's locks keep writers out).
template <typename Visit>
void ForEachRow(Oid relid, Visit visit) {
    List *rels = get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE
                     ? find_all_inheritors(relid, NoLock, nullptr)
                     : list_make1_oid(relid);
    ListCell *lc;
    foreach (lc, rels) {
        Oid leaf = lfirst_oid(lc);
        if (get_rel_relkind(leaf) != RELKIND_RELATION)
            continue;
        Relation rel = table_open(leaf, NoLock);
        Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
        TableScanDesc scan = BeginTableScan(rel, snapshot);
        TupleTableSlot *slot = table_slot_create(rel, nullptr);
        while (table_scan_getnextslot(scan, ForwardScanDirection, slot)) {
            CHECK_FOR_INTERRUPTS();
            visit(rel, slot);
        }
        ExecDropSingleTupleTableSlot(slot);
        table_endscan(scan);
        UnregisterSnapshot(snapshot);
        table_close(rel, NoLock);
    }
}

// The resource key text of the row's resource column, or nullptr (NULL).
const char *RowResource(Relation rel, TupleTableSlot *slot, const char *column) {
    AttrNumber att = get_attnum(RelationGetRelid(rel), column);
    bool isnull;
    Datum v = slot_getattr(slot, att, &isnull);
    return isnull ? nullptr : ResourceKeyText(TupleDescAttr(RelationGetDescr(rel), att - 1)->atttypid, v);
}

// Resource scope to row scope: the first row whose new token is below its
// resource's HWM (or its namespace's floor).
bool FirstRowBelowResource(const ProtectedRow &from, const char *new_column, Token *row_token,
                           bool *row_null, Token *hwm) {
    bool found = false;
    ForEachRow(from.relid, [&](Relation rel, TupleTableSlot *slot) {
        if (found)
            return;
        const char *resource = RowResource(rel, slot, from.resource_column);
        Token judged;
        if (resource == nullptr || !ReadResourceHwm(from.resource_namespace, resource, &judged))
            return;
        bool isnull;
        Datum t = slot_getattr(slot, get_attnum(RelationGetRelid(rel), new_column), &isnull);
        if (isnull || DatumGetInt64(t) < judged) {
            found = true;
            *row_null = isnull;
            *row_token = isnull ? 0 : DatumGetInt64(t);
            *hwm = judged;
        }
    });
    return found;
}

void ToRow(const ProtectedRow &from, const ProtectedRow &to) {
    bool same_column = strcmp(from.token_column, to.token_column) == 0;
    if (from.scope == Scope::kRow && same_column)
        return;
    Token bound = 0, row_token = 0, hwm = 0;
    bool has_bound = false, row_null = false, below = false;
    if (from.scope == Scope::kRow) {
        below = FirstRowBelow(from.relid, quote_identifier(from.token_column), to.token_column, 0,
                              &row_token, &row_null, &hwm);
    } else if (from.scope == Scope::kTable) {
        HoldTableHwm(from.relid);
        has_bound = ReadTableHwm(from.relid, &bound);
        below = has_bound &&
                FirstRowBelow(from.relid, "$1", to.token_column, bound, &row_token, &row_null, &hwm);
    } else {
        HoldResourceHwms();
        has_bound = MaxNamespaceHwm(from.resource_namespace, &bound);
        below = has_bound && FirstRowBelowResource(from, to.token_column, &row_token, &row_null, &hwm);
    }
    if (below)
        RefuseChange(
            from, to, "a row's token is below the high-water mark it is judged by",
            psprintf("A row carries %s in column \"%s\", below the high-water mark " INT64_FORMAT
                     " it is judged by now. In row scope a row's own token judges its next "
                     "writer: tokens in between would be accepted.",
                     row_null ? "no token" : psprintf("token " INT64_FORMAT, row_token),
                     to.token_column, hwm),
            from.scope == Scope::kRow
                ? psprintf("Copy the token column into the new one first, in the same "
                           "transaction: UPDATE ... SET %s = %s WHERE %s IS NULL OR %s < %s. To "
                           "turn a bigint token column into fencing_token, ALTER COLUMN %s TYPE "
                           "fencing_token converts it in place.",
                           quote_identifier(to.token_column), quote_identifier(from.token_column),
                           quote_identifier(to.token_column), quote_identifier(to.token_column),
                           quote_identifier(from.token_column), quote_identifier(from.token_column))
                : psprintf("Raise every row's token column \"%s\" to at least the high-water mark "
                           "it is judged by (for example under fencing_allow_unfenced()), in the "
                           "same transaction as fencing_protect(), or keep the %s scope.",
                           to.token_column, ScopeName(from.scope)));
    if (has_bound)
        RaiseTombstonesTo(from.relid, bound);
}

// The highest tombstone of a row-scope table, its floor included.
bool MaxTombstone(Oid relid, Token *max) {
    Datum oid = ObjectIdGetDatum(relid);
    bool has_table, has_tombstone;
    Token table_hwm;
    MaxStoredHwms(PointerGetDatum(construct_array(&oid, 1, OIDOID, sizeof(Oid), true, 'i')),
                  &has_table, &table_hwm, &has_tombstone, max);
    return has_tombstone;
}

void ToTable(const ProtectedRow &from) {
    Token bound = 0;
    bool has_bound = false;
    if (from.scope == Scope::kTable)
        return;
    if (from.scope == Scope::kRow) {
        Token tombstone_hwm;
        bool has_tombstone = MaxTombstone(from.relid, &tombstone_hwm);
        has_bound = MaxColumn(from.relid, from.token_column, &bound);
        if (has_tombstone && (!has_bound || tombstone_hwm > bound)) {
            bound = tombstone_hwm;
            has_bound = true;
        }
    } else {
        HoldResourceHwms();
        has_bound = MaxNamespaceHwm(from.resource_namespace, &bound);
    }
    if (has_bound)
        MergeTableHwm(from.relid, bound);
}

// Raises, in to's namespace, each resource a row of the table names to the
// row's token: the rows' tokens were their HWMs in row scope.
void RaiseRowsIntoResources(const ProtectedRow &from, const ProtectedRow &to) {
    ForEachRow(from.relid, [&](Relation rel, TupleTableSlot *slot) {
        const char *resource = RowResource(rel, slot, to.resource_column);
        bool isnull;
        Datum t = slot_getattr(slot, get_attnum(RelationGetRelid(rel), from.token_column), &isnull);
        if (resource != nullptr && !isnull)
            (void)CheckAndRaiseResource(to.resource_namespace, resource, DatumGetInt64(t), false);
    });
}

// Raises each HWM of from's namespace (and its floor's value, per resource
// it has) into to's namespace.
void CopyNamespaceHwms(const ProtectedRow &from, const ProtectedRow &to) {
    MemoryContext caller = CurrentMemoryContext;
    Oid types[] = {TEXTOID};
    Datum values[] = {CStringGetTextDatum(from.resource_namespace)};
    uint64 n = hwm::RunLatest(
        "SELECT resource, hwm FROM fencing.resource_hwm WHERE namespace OPERATOR(pg_catalog.=) $1",
        1, types, values);
    char **resources = static_cast<char **>(MemoryContextAlloc(caller, sizeof(char *) * (n + 1)));
    Token *hwms = static_cast<Token *>(MemoryContextAlloc(caller, sizeof(Token) * (n + 1)));
    for (uint64 i = 0; i < n; ++i) {
        resources[i] = MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[i],
                                                                SPI_tuptable->tupdesc, 1));
        bool isnull;
        hwms[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
    }
    for (uint64 i = 0; i < n; ++i) (void)CheckAndRaiseResource(to.resource_namespace, resources[i], hwms[i], false);
}

void ToResource(const ProtectedRow &from, const ProtectedRow &to) {
    bool same_column = strcmp(from.resource_column, to.resource_column) == 0;
    bool same_namespace = strcmp(from.resource_namespace, to.resource_namespace) == 0;
    if (from.scope == Scope::kResource && same_column && same_namespace)
        return;
    Token new_floor = ResourceFloor(to.resource_namespace), hwm = 0;
    if (from.scope == Scope::kRow) {
        Token tombstone_hwm;
        bool has_tombstone = MaxTombstone(from.relid, &tombstone_hwm);
        if (has_tombstone && tombstone_hwm > new_floor)
            RefuseChange(
                from, to, "it has tombstones",
                psprintf("Tombstones (up to " INT64_FORMAT ") fence the keys of deleted rows; "
                         "resource scope judges a re-inserted row by its resource's high-water "
                         "mark only, and which resource a deleted row had is not kept.",
                         tombstone_hwm),
                "Keep row scope, or move to table scope (fencing_protect(..., scope => 'table') "
                "carries the tombstones into the table high-water mark).");
        RaiseRowsIntoResources(from, to);
        return;
    }
    if (from.scope == Scope::kTable) {
        HoldTableHwm(from.relid);
        if (ReadTableHwm(from.relid, &hwm) && hwm > new_floor)
            RefuseChange(
                from, to, "its table high-water mark would not judge resources",
                psprintf("Every write is judged by the table high-water mark " INT64_FORMAT
                         " now; in resource scope a write is judged by its resource's high-water "
                         "mark only, which may be lower.",
                         hwm),
                "Keep table scope.");
        return;
    }
    HoldResourceHwms();
    if (!same_column && MaxNamespaceHwm(from.resource_namespace, &hwm) && hwm > new_floor)
        RefuseChange(from, to, "another resource column",
                     psprintf("The high-water marks (up to " INT64_FORMAT ") are kept by the "
                              "values of column \"%s\"; another column's values would name other "
                              "resources.",
                              hwm, from.resource_column),
                     "Keep the resource column, or move to table scope first (it carries the "
                     "namespace's highest high-water mark).");
    Token old_floor = ResourceFloor(from.resource_namespace);
    if (old_floor > new_floor)
        RefuseChange(from, to, "the old namespace's floor is higher",
                     psprintf("Namespace '%s' has retired high-water marks into its floor "
                              INT64_FORMAT ", above namespace '%s''s floor " INT64_FORMAT ".",
                              from.resource_namespace, old_floor, to.resource_namespace, new_floor),
                     "Keep the namespace.");
    CopyNamespaceHwms(from, to);
}

}  // namespace

bool PolicyChangeMovesHwms(const ProtectedRow &from, const ProtectedRow &to) {
    if (from.scope != to.scope || strcmp(from.token_column, to.token_column) != 0)
        return true;
    return from.scope == Scope::kResource &&
           (strcmp(from.resource_column, to.resource_column) != 0 ||
            strcmp(from.resource_namespace, to.resource_namespace) != 0);
}

void CarryHwmsAcrossPolicy(const ProtectedRow &from, const ProtectedRow &to) {
    if (!PolicyChangeMovesHwms(from, to))
        return;
    InternalSession access;
    BeginInternal(&access);
    switch (to.scope) {
        case Scope::kRow:
            ToRow(from, to);
            break;
        case Scope::kTable:
            ToTable(from);
            break;
        case Scope::kResource:
            ToResource(from, to);
            break;
    }
    EndInternal(&access);
}

}  // namespace fencing::pg
