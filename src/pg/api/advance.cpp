// Fencing a predecessor before the first read, for tokens from elsewhere
// (etcd, ZooKeeper, another lock service):
//   fencing_resource_advance(resource, token, namespace)  the namespace owner's
//                                                          privileges
//   fencing_advance(target, token, key)                    UPDATE on the table
//                                                          (resource scope: and
//                                                          the namespace's)
// Each raises one HWM to token in one atomic step and returns true when the
// HWM is now token, false when it was already higher (nothing changes).
// Non-strict comparison; in a strict-mode table the advancing transaction may
// then write with the token (it raised the HWM: pg/hwm/raise_registry.hpp).
#include "pg/base/boundary.hpp"
#include "pg/api/hwm_args.hpp"
#include "pg/hwm/lock.hpp"
#include "pg/hwm/store.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/keys/resource_key.hpp"
#include "pg/catalog/namespaces.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/catalog/citus_node.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/keys/row_key.hpp"
#include "pg/keys/tombstone_key.hpp"
#include "pg/hwm/tombstones.hpp"

extern "C" {
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "storage/lmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

namespace fencing::pg {
namespace {

// A strict check-and-raise's verdict as advance's answer: raised, or already
// exactly at token (true); already higher (false).
bool Advanced(const HwmVerdict &verdict, Token token) {
    return verdict.admitted || verdict.hwm == token;
}

// Row scope, as the caller (its UPDATE privilege, its RLS): lock the row; if
// its token is lower, UPDATE the token column (the guard admits and raises it).
// Returns false when there is no such row (visible to the caller).
// "col1 OPERATOR(s.=) $1 AND ..." for the key, its parameter types in argtypes.
char *KeyPredicate(Oid relid, const KeyValues &k, Oid *argtypes) {
    Relation rel = table_open(relid, AccessShareLock);
    StringInfoData pred;
    initStringInfo(&pred);
    AppendKeyPredicate(&pred, rel, k.pk, k.pkindex, argtypes);
    table_close(rel, AccessShareLock);
    return pred.data;
}

// The row locked above must now carry the token: a BEFORE UPDATE trigger of
// the table's that skipped the UPDATE (returned NULL: one that skips updates
// leaving the payload as it was, say) or set the token column lower would
// leave the row below what the advance reports. From the UPDATE's RETURNING.
void RequireRowRaised(Oid relid, Token token) {
    bool isnull = true;
    Token now = 0;
    if (SPI_processed > 0)
        now =
            DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    if (SPI_processed > 0 && !isnull && now >= token)
        return;
    ereport(ERROR, (errcode(ERRCODE_TRIGGERED_ACTION_EXCEPTION),
                    errmsg("fencing_advance could not raise the row's token on %s", RelName(relid)),
                    errdetail(SPI_processed == 0
                                  ? "A BEFORE UPDATE trigger skipped the update of the row."
                                  : "A BEFORE UPDATE trigger set its token below " INT64_FORMAT ".",
                              token),
                    errhint("Let the table's triggers pass an update that changes only the token "
                            "column.")));
}

bool AdvanceLiveRow(Oid relid, const ProtectedRow &row, const KeyValues &k, Token token,
                    bool *advanced) {
    Oid argtypes[INDEX_MAX_KEYS + 1];
    StringInfoData pred;
    initStringInfo(&pred);
    appendStringInfoString(&pred, KeyPredicate(relid, k, argtypes));
    int natts = k.pk.natts;
    argtypes[natts] = INT8OID;
    Datum values[INDEX_MAX_KEYS + 1];
    for (int i = 0; i < natts; ++i) values[i] = k.values[i];
    values[natts] = Int64GetDatum(token);
    const char *column = quote_identifier(row.token_column);
    char *lock_sql = psprintf("SELECT %s::pg_catalog.int8 FROM %s WHERE %s FOR UPDATE", column,
                              RelName(relid), pred.data);
    if (SPI_connect() != SPI_OK_CONNECT)
        ereport(ERROR,
                (errcode(ERRCODE_INTERNAL_ERROR), errmsg("fencing: could not connect to SPI")));
    int rc = SPI_execute_with_args(lock_sql, natts, argtypes, values, nullptr, false, 0);
    if (rc < 0)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("fencing: advance failed: %s", SPI_result_code_string(rc))));
    bool found = SPI_processed > 0;
    if (found) {
        bool isnull;
        Token current =
            DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
        if (!isnull && current >= token) {
            *advanced = current == token;
        } else {
            // The row is locked by us since the SELECT: no read-check-write.
            char *update_sql =
                psprintf("UPDATE %s SET %s = $%d WHERE %s RETURNING %s::pg_catalog.int8",
                         RelName(relid), column, natts + 1, pred.data, column);
            rc = SPI_execute_with_args(update_sql, natts + 1, argtypes, values, nullptr, false, 0);
            if (rc < 0)
                ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                                errmsg("fencing: advance failed: %s", SPI_result_code_string(rc))));
            RequireRowRaised(relid, token);
            *advanced = true;
        }
    }
    SPI_finish();
    return found;
}

// The row lookups run as the caller, under its row-level security, and
// under REPEATABLE READ or SERIALIZABLE with the transaction's snapshot: a
// row of the key hidden by a policy, or committed after the snapshot, is
// not seen, and the tombstone written for the key would sit above a live row
// whose own token judges its writers. Such a row (its inserters waited for,
// so the latest snapshot is complete; a later INSERT waits for the
// tombstone) is looked for in the primary key with the latest snapshot, and
// refused: a serialization failure when the snapshot hid it,
// as PostgreSQL's own; else 42501 (the caller's unique violation on that key
// would show the row exists as well).
void RefuseUnseenRow(Oid relid, const KeyValues &k) {
    Relation rel = table_open(relid, AccessShareLock);
    bool found = KeyHasLatestRow(rel, k.values);
    table_close(rel, AccessShareLock);
    if (found && IsolationUsesXactSnapshot())
        ereport(ERROR,
                (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                 errmsg("could not serialize access due to concurrent insert"),
                 errdetail("A row of the key given to fencing_advance() on %s was committed after "
                           "this transaction's snapshot: its token cannot be raised here.",
                           RelName(relid)),
                 errhint("Retry the transaction.")));
    if (found)
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("cannot advance the key's row of %s: row-level security hides it from you",
                        RelName(relid)),
                 errdetail("Its token would stay below the high-water mark this advance reports."),
                 errhint("Advance it as a role whose policies let it see the row.")));
}

bool AdvanceRow(Oid relid, const ProtectedRow &row, const KeyValues &k, Token token) {
    // An ATTACH PARTITION judging the rows it brings is waited for; once it
    // has committed, its partition (maybe holding the key) is seen: the lock
    // wait accepts the invalidations it sent, as a table lock's would.
    LockAttachShared(relid);
    AcceptInvalidationMessages();
    bool advanced = false;
    if (AdvanceLiveRow(relid, row, k, token, &advanced))
        return advanced;
    // No row: the key's tombstone, which an INSERT of the key is judged by.
    Datum key = TombstoneKey(k.pk.natts, k.types, k.values);
    Relation keyrel = table_open(relid, AccessShareLock);
    RequireTombstoneKeyFits(keyrel, relid, key, false);
    table_close(keyrel, AccessShareLock);
    InternalSession session;
    BeginInternal(&session);
    // A key with no tombstone is judged against the table's floor: a
    // tombstone below it would lower the key (retired into the floor) to it.
    Token floor = TombstoneFloor(relid);
    RaiseTombstone(relid, key, token > floor ? token : floor);
    // The floor read above may predate a retirement that was deleting the
    // key's tombstone: the tombstone's upsert waited for it, and its floor
    // raise is visible now. The tombstone, this transaction's now, takes it.
    Token floor_after = TombstoneFloor(relid);
    if (floor_after > floor && floor_after > token)
        RaiseTombstone(relid, key, floor_after);
    Token hwm = token;
    (void)LookupTombstone(relid, key, &hwm);
    EndInternal(&session);
    // An INSERT of the key may be in flight: its recheck ran before our
    // tombstone existed. Wait for it (as the unique check would), then look
    // again: a row committed meanwhile is raised too. An INSERT that comes
    // later waits for our tombstone in its recheck.
    Relation rel = table_open(relid, AccessShareLock);
    WaitForKeyWritersOf(rel, k.values);
    table_close(rel, AccessShareLock);
    bool row_advanced = false;
    if (AdvanceLiveRow(relid, row, k, token, &row_advanced))
        return row_advanced && hwm == token;
    RefuseUnseenRow(relid, k);
    return hwm == token;
}

// The namespace's HWMs are shared by its tables: raising one is its owner's
// call.
void RequireAdvanceInNamespace(const char *name_space) {
    InternalSession session;
    BeginInternal(&session);
    RequireNamespaceOwner(name_space, session.saved_user, "advance its high-water marks");
    EndInternal(&session);
}

// Under REPEATABLE READ the policy is read with the transaction's snapshot:
// one a policy change committed after would be raised where no write looks
// any more. Refused as PostgreSQL refuses a concurrent update.
void RequirePolicyInSnapshot(Oid relid) {
    if (!IsolationUsesXactSnapshot())
        return;
    InternalSession session;
    BeginInternal(&session);
    bool changed = ProtectedRowChangedSinceSnapshot(relid);
    EndInternal(&session);
    if (changed)
        ereport(ERROR,
                (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                 errmsg("could not serialize access due to concurrent policy change"),
                 errdetail("The fencing policy of %s changed after this transaction's snapshot.",
                           RelName(relid)),
                 errhint("Retry the transaction.")));
}

}  // namespace
}  // namespace fencing::pg

using namespace fencing;
using namespace fencing::pg;

FENCING_FUNCTION(fencing_resource_advance) {
    char *name_space = NamespaceArg(fcinfo, 2);
    if (PG_ARGISNULL(0))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("resource must not be NULL")));
    char *resource = text_to_cstring(PG_GETARG_TEXT_PP(0));
    Token token = TokenArg(fcinfo, 1);
    RefuseOnCitus(CitusAction::kResourceAdvance, InvalidOid, Scope::kRow);
    RequireStorableResourceKey(name_space, resource);
    InternalSession session;
    BeginInternal(&session);
    RequireNamespaceWriter(name_space, session.saved_user, "advance its high-water marks");
    EndInternal(&session);
    PG_RETURN_BOOL(Advanced(CheckAndRaiseResource(name_space, resource, token, true), token));
}

FENCING_FUNCTION(fencing_advance) {
    Oid relid = ExistingRelationArg(fcinfo, 0, "target");
    Token token = TokenArg(fcinfo, 1);
    // As writes: UPDATE on the table, checked as the caller.
    RequireRelationPrivilege(relid, ACL_UPDATE);
    RefuseOnCitus(CitusAction::kAdvance, relid, Scope::kRow);
    // The table's lock before its policy is read (AccessShare: only a swap's
    // or a DROP's ACCESS EXCLUSIVE waits for it, or is waited for). A table
    // swap (fencing_transfer_state) in flight is waited for; once it has
    // committed, the swapped-out table is no longer protected (its state
    // went to the table that replaced it), and this advance is refused
    // rather than raising a mark nothing reads.
    LockRelationOid(relid, AccessShareLock);
    // The policy read next is the one in force until this transaction ends:
    // fencing_protect() changes it under the same lock, held exclusively.
    LockAttachShared(relid);
    AcceptInvalidationMessages();
    RequirePolicyInSnapshot(relid);
    ProtectedRow row;
    RequireProtectedTarget(fcinfo, &row);
    TargetKey key;
    RequireTargetKey(fcinfo, 2, relid, row, &key);
    switch (row.scope) {
        case Scope::kRow:
            PG_RETURN_BOOL(AdvanceRow(relid, row, key.row, token));
        case Scope::kResource:
            RequireAdvanceInNamespace(row.resource_namespace);
            PG_RETURN_BOOL(Advanced(
                CheckAndRaiseResource(row.resource_namespace, key.resource, token, true), token));
        case Scope::kTable:
            if (key.given)
                ereport(ERROR,
                        (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                         errmsg("table %s is fenced as a whole: pass no key", RelName(relid))));
            PG_RETURN_BOOL(Advanced(CheckAndRaiseTable(relid, token, true), token));
    }
    pg_unreachable();
}
