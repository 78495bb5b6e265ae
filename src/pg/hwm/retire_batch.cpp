// Retirement's batches (pg/hwm/store.hpp): idle entries deleted and folded
// into their floor in one atomic step, in the caller's transaction, through
// fixed statements on the extension's tables. The caller (pg/api/retire.cpp)
// has checked the rights and opened the internal session.
#include "pg/hwm/durability.hpp"
#include "pg/hwm/store.hpp"
#include "pg/base/internal_access.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
}

namespace fencing::pg {
namespace {

// count(*) and max(value) of the one-row result of a batch statement.
void CountAndMax(int64 *count, Token *max) {
    bool isnull;
    *count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    Datum m = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
    *max = isnull ? 0 : DatumGetInt64(m);
}

// Raises the floor (never lowers it) and counts what was retired; the
// commit is made as durable as an HWM raise.
void RaiseFloor(bool table, Datum key, Token highest, int64 retired) {
    if (retired == 0)
        return;
    if (table)
        ForgetTombstoneFloor();
    Oid types[] = {table ? Oid{OIDOID} : Oid{TEXTOID}, INT8OID, INT8OID};
    Datum values[] = {key, Int64GetDatum(highest), Int64GetDatum(retired)};
    RunInternalSql(table ? "UPDATE fencing.tombstone_floor"
                           " SET floor = GREATEST(floor, $2),"
                           "     retired = retired OPERATOR(pg_catalog.+) $3,"
                           "     retired_at = pg_catalog.now()"
                           " WHERE relid OPERATOR(pg_catalog.=) $1"
                         : "UPDATE fencing.resource_floor"
                           " SET floor = GREATEST(floor, $2),"
                           "     retired = retired OPERATOR(pg_catalog.+) $3,"
                           "     retired_at = pg_catalog.now()"
                           " WHERE namespace OPERATOR(pg_catalog.=) $1",
                   3, types, values, nullptr, false);
    NoteHwmRaised();
}

// Text values of column 1 of the last result, as a text[] datum, and the last one.
Datum TextColumn(char **last) {
    int n = static_cast<int>(SPI_processed);
    Datum *elems = static_cast<Datum *>(palloc((n > 0 ? n : 1) * sizeof(Datum)));
    for (int i = 0; i < n; ++i) {
        bool isnull;
        elems[i] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
        elems[i] = PointerGetDatum(PG_DETOAST_DATUM_COPY(elems[i]));
    }
    if (last != nullptr && n > 0)
        *last = TextDatumGetCString(elems[n - 1]);
    return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

}  // namespace

// One batch of a table's tombstones: at most limit retired, in key order
// after *key_cursor, which moves to the last key looked at.
int64 RetireTombstoneBatch(Oid relid, Datum idle, int64 limit, Datum *key_cursor) {
    Oid types[] = {OIDOID, INTERVALOID, INT8OID, TEXTARRAYOID};
    Datum values[] = {ObjectIdGetDatum(relid), idle, Int64GetDatum(limit), *key_cursor};
    RunInternalSql(
        "WITH c AS (SELECT t.relid, t.key FROM fencing.row_tombstone t"
        "            WHERE t.relid OPERATOR(pg_catalog.=) $1"
        "              AND t.key OPERATOR(pg_catalog.>) $4"
        "              AND t.raised_at OPERATOR(pg_catalog.<)"
        "                  (pg_catalog.now() OPERATOR(pg_catalog.-) $2)"
        "            ORDER BY t.key LIMIT $3 FOR UPDATE SKIP LOCKED),"
        "     d AS (DELETE FROM fencing.row_tombstone t USING c"
        "            WHERE t.relid OPERATOR(pg_catalog.=) c.relid"
        "              AND t.key OPERATOR(pg_catalog.=) c.key RETURNING t.hwm)"
        " SELECT pg_catalog.count(*), pg_catalog.max(hwm),"
        "        (SELECT pg_catalog.max(c.key) FROM c) FROM d",
        4, types, values, nullptr, false);
    int64 count;
    Token highest;
    CountAndMax(&count, &highest);
    bool isnull;
    Datum last = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull);
    if (!isnull)
        *key_cursor = PointerGetDatum(PG_DETOAST_DATUM_COPY(last));
    RaiseFloor(true, ObjectIdGetDatum(relid), highest, count);
    return count;
}

// The ended-before-cutoff test of a lease row l: released, or expired,
// whichever came first, more than idle ago.
#define LEASE_ENDED                                               \
    " LEAST(COALESCE(l.released_at, l.expires_at), l.expires_at)" \
    " OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) $2)"

// One batch of a namespace, over the resources after *cursor (in order):
//   1. the idle HWM rows' resources (read, not locked);
//   2. their leases that ended more than idle ago, locked (lease rows first,
//      as fencing_acquire locks them);
//   3. of those HWM rows, the ones whose resource has no lease or one locked
//      in 2, locked (skipping any being written), still idle, deleted;
//   4. the leases of 2 whose HWM row is gone, deleted;
//   5. the floor raised over every deleted HWM and lease token.
// A live lease (or one ended recently) keeps its resource's HWM. Returns
// how many entries were retired; *done when no resource is left after.
int64 RetireResourceBatch(const char *name_space, Datum idle, int64 limit, char **cursor,
                          bool *done) {
    Datum ns = CStringGetTextDatum(name_space);
    Oid types1[] = {TEXTOID, INTERVALOID, INT8OID, TEXTOID};
    Datum values1[] = {ns, idle, Int64GetDatum(limit), CStringGetTextDatum(*cursor)};
    RunInternalSql(
        "SELECT h.resource FROM fencing.resource_hwm h"
        " WHERE h.namespace OPERATOR(pg_catalog.=) $1"
        "   AND h.raised_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) $2)"
        "   AND h.resource OPERATOR(pg_catalog.>) $4"
        " ORDER BY h.resource LIMIT $3",
        4, types1, values1, nullptr, true);
    *done = static_cast<int64>(SPI_processed) < limit;
    if (SPI_processed == 0)
        return 0;
    Datum candidates = TextColumn(cursor);
    Oid types2[] = {TEXTOID, INTERVALOID, TEXTARRAYOID};
    Datum values2[] = {ns, idle, candidates};
    RunInternalSql(
        "SELECT l.resource FROM fencing.lease l"
        " WHERE l.namespace OPERATOR(pg_catalog.=) $1"
        "   AND l.resource OPERATOR(pg_catalog.=) ANY ($3) AND" LEASE_ENDED
        " ORDER BY l.resource COLLATE \"C\" FOR UPDATE SKIP LOCKED",
        3, types2, values2, nullptr, false);
    Datum ended = TextColumn(nullptr);
    Oid types3[] = {TEXTOID, INTERVALOID, TEXTARRAYOID, TEXTARRAYOID};
    Datum values3[] = {ns, idle, candidates, ended};
    RunInternalSql(
        "WITH c AS (SELECT h.namespace, h.resource FROM fencing.resource_hwm h"
        "            WHERE h.namespace OPERATOR(pg_catalog.=) $1"
        "              AND h.resource OPERATOR(pg_catalog.=) ANY ($3)"
        "              AND h.raised_at OPERATOR(pg_catalog.<)"
        "                  (pg_catalog.now() OPERATOR(pg_catalog.-) $2)"
        "              AND (h.resource OPERATOR(pg_catalog.=) ANY ($4)"
        "                   OR NOT EXISTS (SELECT 1 FROM fencing.lease l"
        "                                   WHERE l.namespace OPERATOR(pg_catalog.=) h.namespace"
        "                                     AND l.resource OPERATOR(pg_catalog.=) h.resource))"
        "            FOR UPDATE SKIP LOCKED),"
        "     d AS (DELETE FROM fencing.resource_hwm h USING c"
        "            WHERE h.namespace OPERATOR(pg_catalog.=) c.namespace"
        "              AND h.resource OPERATOR(pg_catalog.=) c.resource RETURNING h.hwm)"
        " SELECT pg_catalog.count(*), pg_catalog.max(hwm) FROM d",
        4, types3, values3, nullptr, false);
    int64 hwms;
    Token highest;
    CountAndMax(&hwms, &highest);
    Oid types4[] = {TEXTOID, TEXTARRAYOID};
    Datum values4[] = {ns, ended};
    RunInternalSql(
        "WITH d AS (DELETE FROM fencing.lease l"
        "            WHERE l.namespace OPERATOR(pg_catalog.=) $1"
        "              AND l.resource OPERATOR(pg_catalog.=) ANY ($2)"
        "              AND NOT EXISTS (SELECT 1 FROM fencing.resource_hwm h"
        "                               WHERE h.namespace OPERATOR(pg_catalog.=) l.namespace"
        "                                 AND h.resource OPERATOR(pg_catalog.=) l.resource)"
        "            RETURNING l.token)"
        " SELECT pg_catalog.count(*), pg_catalog.max(token) FROM d",
        2, types4, values4, nullptr, false);
    int64 leases;
    Token highest_lease;
    CountAndMax(&leases, &highest_lease);
    RaiseFloor(false, ns, highest_lease > highest ? highest_lease : highest, hwms + leases);
    return hwms + leases;
}

// Inside an internal session; the caller's rights checked.
}  // namespace fencing::pg
