// Fencing state that follows the logical table (docs/migrations.md):
//   fencing_transfer_state(source regclass, target regclass)  owner of both
//   fencing_forget_dropped(table_name text)  the dropped table's owner; logged
// The rights are checked and the tables locked here, as the caller; the state
// is moved by fixed SQL of the extension (fencing.transfer_state_apply) in an
// internal session.
#include "pg/base/boundary.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/ddl/copy_snapshot.hpp"
#include "pg/hwm/durability.hpp"
#include "pg/hwm/store.hpp"
#include "pg/ddl/dropped_rows.hpp"
#include "pg/guard/install.hpp"
#include "pg/guard/restored.hpp"

extern "C" {
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

namespace fencing::pg {
namespace {

void RequirePlainOrPartitioned(Oid relid) {
    char kind = get_rel_relkind(relid);
    if (kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE)
        ereport(ERROR,
                (errcode(ERRCODE_WRONG_OBJECT_TYPE), errmsg("%s is not a table", RelName(relid))));
}

// Row scope keeps each row's HWM in the row itself: the state the transfer
// moves does not hold it. A target row of the same key with a lower token
// than the source's, or none (a copy that missed a write, or a swap undone
// after the new table was written) would lower it: refused. Run as the caller (the
// owner of both tables), after the locks. A source row missing from the
// target is refused too: its key has no row and no tombstone there.
// The source's token column when it is fenced in row scope, else empty.
void RowScopeToken(Oid source, char *token) {
    token[0] = '\0';
    InternalSession access;
    BeginInternal(&access);
    ProtectedRow row;
    if (ReadProtectedRow(source, &row) && row.scope == Scope::kRow)
        strlcpy(token, row.token_column, NAMEDATALEN);
    EndInternal(&access);
}

// After the state moved (so the target is known to have the token column
// and the same key): raises when a target row holds a lower token.
void RequireRowsCarried(Oid source, Oid target, const char *token) {
    if (token[0] == '\0')
        return;
    if (SPI_connect() != SPI_OK_CONNECT)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("fencing: SPI_connect failed")));
    Oid types[] = {OIDOID, OIDOID, TEXTOID};
    Datum values[] = {ObjectIdGetDatum(source), ObjectIdGetDatum(target),
                      CStringGetTextDatum(token)};
    int rc = SPI_execute_with_args(
        "SELECT pg_catalog.format('SELECT pg_catalog.count(*) FROM %s s LEFT JOIN %s t USING (%s)"
        " WHERE t.ctid IS NULL OR t.%I::pg_catalog.text::pg_catalog.numeric OPERATOR(pg_catalog.<)"
        " s.%I::pg_catalog.text::pg_catalog.numeric', $1::pg_catalog.regclass,"
        " $2::pg_catalog.regclass, pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', '"
        " ORDER BY a.attnum), $3, $3)"
        " FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a"
        "   ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid"
        "  AND a.attnum OPERATOR(pg_catalog.=) ANY (i.indkey::pg_catalog.int2[])"
        " WHERE i.indrelid OPERATOR(pg_catalog.=) $1 AND i.indisprimary"
        " HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0",
        3, types, values, nullptr, true, 1);
    if (rc == SPI_OK_SELECT && SPI_processed == 1) {
        char *check = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
        // Not read-only: a snapshot taken now, after the locks, not the
        // statement's (a writer the locks waited for is seen).
        if (SPI_execute(check, false, 1) == SPI_OK_SELECT && SPI_processed == 1) {
            char *lower = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
            if (strcmp(lower, "0") != 0)
                ereport(ERROR,
                        (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                         errmsg("cannot transfer the fencing state of %s to %s: %s of its rows "
                                "are missing or have a lower token in %s",
                                RelName(source), RelName(target), lower, RelName(target)),
                         errdetail("In row scope a row's high-water mark is its own token; "
                                   "the transfer would lower it (a copy that missed a write, "
                                   "or a swap undone after the new table was written)."),
                         errhint("Copy the rows with their tokens into %s first (in the "
                                 "transaction that transfers, after locking both tables).",
                                 RelName(target))));
        }
    }
    SPI_finish();
}

Datum TransferState(FunctionCallInfo fcinfo) {
    Oid source = ExistingRelationArg(fcinfo, 0, "source");
    Oid target = ExistingRelationArg(fcinfo, 1, "target");
    if (source == target)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("source and target are the same table %s", RelName(source))));
    RequirePlainOrPartitioned(source);
    RequirePlainOrPartitioned(target);
    RequireRelationOwner(source);
    RequireRelationOwner(target);
    // Writers and fencing_advance() of either table wait for the swap's
    // commit; a writer that resolved the source's name before then finds the
    // source swapped out (it refuses writes), and one that resolves the name
    // afterwards finds the table that took it.
    LockRelationOid(source, AccessExclusiveLock);
    LockRelationOid(target, AccessExclusiveLock);
    // A writer that names a partition holds no lock on its parent: lock
    // every partition too, so that a DELETE in flight there commits (its
    // tombstone under the parent) before the state is read and moved.
    find_all_inheritors(source, AccessExclusiveLock, nullptr);
    find_all_inheritors(target, AccessExclusiveLock, nullptr);
    char token[NAMEDATALEN];
    RowScopeToken(source, token);
    InternalSession access;
    BeginInternal(&access);
    Oid both[] = {source, target};
    RequireStateInSnapshot(both, 2, "fencing_transfer_state()");
    RequireRowsInSnapshot(source, "fencing_transfer_state()");
    RequireRowsAsRead(source, "fencing_transfer_state()");
    // A source restored without its state hands on nothing that could lift
    // that: the target's guards carry its mark (pg/guard/restored.hpp).
    const char *restored_mark = RestoredMark(source);
    if (restored_mark != nullptr)
        SetRestoredMark(target, restored_mark);
    Oid types[] = {OIDOID, OIDOID};
    Datum values[] = {ObjectIdGetDatum(source), ObjectIdGetDatum(target)};
    HoldTombstoneFloorForRaise(target);
    RunInternalSql("SELECT fencing.transfer_state_apply($1, $2)", 2, types, values, nullptr, false);
    // The moved tombstones, floor and HWMs judge the target's writers from the
    // acknowledgement on: committed as durably as a raise.
    NoteDurableChange();
    EndInternal(&access);
    RequireRowsCarried(source, target, token);
    if (token[0] != '\0')
        RequireNoRowBelowTombstone(target, token, RelName(source), RelName(source), source);
    PG_RETURN_VOID();
}

Datum ForgetDropped(FunctionCallInfo fcinfo) {
    char *given = text_to_cstring(PG_GETARG_TEXT_PP(0));
    Oid caller = GetUserId();
    InternalSession access;
    BeginInternal(&access);
    Oid types[] = {TEXTOID};
    Datum values[] = {CStringGetTextDatum(given)};
    // The name as kept: quoted schema.table, whatever quoting the caller used.
    RunInternalSql(
        "SELECT d.table_name, d.owner::pg_catalog.text FROM fencing.dropped_state d,"
        " pg_catalog.parse_ident($1) AS i"
        " WHERE pg_catalog.cardinality(i) OPERATOR(pg_catalog.=) 2"
        "   AND d.table_name OPERATOR(pg_catalog.=) pg_catalog.format('%I.%I', i[1], i[2])"
        "   AND d.dropped_xid OPERATOR(pg_catalog.=)"
        "       pg_catalog.pg_current_xact_id_if_assigned()"
        " FOR UPDATE OF d",
        1, types, values, nullptr, false);
    if (SPI_processed == 0)
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_OBJECT),
                 errmsg("this transaction dropped no fenced table %s whose state is kept", given),
                 errhint("Give the name as schema.table; fencing_dropped_state lists "
                         "what this transaction keeps.")));
    char *name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
    char *owner = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
    Oid owner_oid = get_role_oid(owner, true);
    if (!superuser_arg(caller) && !(OidIsValid(owner_oid) && has_privs_of_role(caller, owner_oid)))
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("must be owner of dropped table %s to discard its fencing state", name)));
    Oid log_types[] = {TEXTOID, NAMEOID};
    Datum log_values[] = {
        CStringGetTextDatum(name),
        DirectFunctionCall1(namein, CStringGetDatum(GetUserNameFromId(caller, false)))};
    RunInternalSql(
        "WITH gone AS (DELETE FROM fencing.dropped_state d"
        "   WHERE d.table_name OPERATOR(pg_catalog.=) $1"
        "   RETURNING d.table_name, d.table_hwm,"
        "     (SELECT pg_catalog.count(*) FROM fencing.dropped_tombstone t"
        "       WHERE t.table_name OPERATOR(pg_catalog.=) d.table_name) AS tombstones)"
        " INSERT INTO fencing.reset_log (reset_by, target, key, old_hwm)"
        " SELECT $2, 'dropped table ' OPERATOR(pg_catalog.||) g.table_name,"
        "   g.tombstones::pg_catalog.text OPERATOR(pg_catalog.||) ' tombstones',"
        "   g.table_hwm FROM gone g",
        2, log_types, log_values, nullptr, false);
    EndInternal(&access);
    PG_RETURN_INT64(1);
}

}  // namespace
}  // namespace fencing::pg

using namespace fencing::pg;

FENCING_FUNCTION(fencing_transfer_state) {
    return TransferState(fcinfo);
}

FENCING_FUNCTION(fencing_forget_dropped) {
    return ForgetDropped(fcinfo);
}
