#include "pg/hwm/store_sql.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "executor/spi.h"
}

namespace fencing::pg::hwm {

InternalStatement resource_raise = {
    "UPDATE fencing.resource_hwm SET hwm = $3"
    " WHERE namespace OPERATOR(pg_catalog.=) $1 AND resource OPERATOR(pg_catalog.=) $2"
    "   AND CASE WHEN $4 THEN hwm OPERATOR(pg_catalog.<) $3"
    "            ELSE hwm OPERATOR(pg_catalog.<=) $3 END",
    4,
    {TEXTOID, TEXTOID, INT8OID, BOOLOID},
    nullptr};
InternalStatement resource_raise_stamped = {
    "UPDATE fencing.resource_hwm SET hwm = $3, raised_at = pg_catalog.now()"
    " WHERE namespace OPERATOR(pg_catalog.=) $1 AND resource OPERATOR(pg_catalog.=) $2"
    "   AND CASE WHEN $4 THEN hwm OPERATOR(pg_catalog.<) $3"
    "            ELSE hwm OPERATOR(pg_catalog.<=) $3 END",
    4,
    {TEXTOID, TEXTOID, INT8OID, BOOLOID},
    nullptr};
InternalStatement resource_lock = {
    "SELECT 1 FROM fencing.resource_hwm"
    " WHERE namespace OPERATOR(pg_catalog.=) $1 AND resource OPERATOR(pg_catalog.=) $2"
    " FOR NO KEY UPDATE",
    2,
    {TEXTOID, TEXTOID},
    nullptr};
InternalStatement table_lock = {
    "SELECT 1 FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) $1 FOR NO KEY UPDATE",
    1,
    {OIDOID},
    nullptr};
InternalStatement resource_read = {
    "SELECT hwm FROM fencing.resource_hwm"
    " WHERE namespace OPERATOR(pg_catalog.=) $1 AND resource OPERATOR(pg_catalog.=) $2",
    2,
    {TEXTOID, TEXTOID},
    nullptr};
InternalStatement resource_first = {
    "INSERT INTO fencing.resource_hwm (namespace, resource, hwm) VALUES ($1, $2, $3)"
    " ON CONFLICT DO NOTHING",
    3,
    {TEXTOID, TEXTOID, INT8OID},
    nullptr};
InternalStatement table_raise = {
    "UPDATE fencing.table_hwm SET hwm = $2"
    " WHERE relid OPERATOR(pg_catalog.=) $1"
    "   AND CASE WHEN $3 THEN hwm OPERATOR(pg_catalog.<) $2"
    "            ELSE hwm OPERATOR(pg_catalog.<=) $2 END",
    3,
    {OIDOID, INT8OID, BOOLOID},
    nullptr};
InternalStatement table_read = {
    "SELECT hwm FROM fencing.table_hwm WHERE relid OPERATOR(pg_catalog.=) $1",
    1,
    {OIDOID},
    nullptr};
InternalStatement table_first = {
    "INSERT INTO fencing.table_hwm (relid, hwm) VALUES ($1, $2) ON CONFLICT DO NOTHING",
    2,
    {OIDOID, INT8OID},
    nullptr};
InternalStatement tombstone_read = {
    "SELECT hwm FROM fencing.row_tombstone"
    " WHERE relid OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2",
    2,
    {OIDOID, TEXTARRAYOID},
    nullptr};
InternalStatement tombstone_raise = {
    "INSERT INTO fencing.row_tombstone AS t (relid, key, hwm) VALUES ($1, $2, $3)"
    " ON CONFLICT (relid, key) DO UPDATE SET hwm = excluded.hwm"
    " WHERE t.hwm OPERATOR(pg_catalog.<) excluded.hwm",
    3,
    {OIDOID, TEXTARRAYOID, INT8OID},
    nullptr};

InternalStatement tombstone_raise_stamped = {
    "INSERT INTO fencing.row_tombstone AS t (relid, key, hwm) VALUES ($1, $2, $3)"
    " ON CONFLICT (relid, key) DO UPDATE SET hwm = excluded.hwm, raised_at = pg_catalog.now()"
    " WHERE t.hwm OPERATOR(pg_catalog.<) excluded.hwm",
    3,
    {OIDOID, TEXTARRAYOID, INT8OID},
    nullptr};

uint64 Run(InternalStatement *stmt, Datum *values) {
    return RunInternalStatement(stmt, values, nullptr);
}

bool FirstInt8(Token *out) {
    if (SPI_processed == 0)
        return false;
    bool isnull;
    Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    *out = isnull ? 0 : DatumGetInt64(d);
    return true;
}

}  // namespace fencing::pg::hwm
