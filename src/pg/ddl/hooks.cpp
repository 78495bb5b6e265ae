// DDL hooks: keep protection in step with CREATE TABLE (auto-protection),
// ALTER TABLE (renames, dropped or retyped columns, partitions) and restore.
//   fencing.on_table_ddl(oid)   called by the ddl_command_end event trigger
//   fencing.protected_sync()    AFTER trigger on fencing.protected (ALWAYS)
#include "pg/base/boundary.hpp"
#include "pg/base/compat.hpp"
#include "pg/ddl/checks.hpp"
#include "pg/guard/install.hpp"
#include "pg/guard/restored.hpp"
#include "pg/base/guc.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/catalog/citus_node.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/types/token_type.hpp"
#include "pg/keys/tombstone_key.hpp"
#include "pg/hwm/tombstones.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace fencing::pg {
namespace {

// A column's name, or nullptr once it has been dropped.
char *LiveAttName(Oid relid, AttrNumber attnum) {
    HeapTuple tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(attnum));
    if (!HeapTupleIsValid(tup))
        return nullptr;
    auto *att = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tup));
    char *name = att->attisdropped ? nullptr : pstrdup(NameStr(att->attname));
    ReleaseSysCache(tup);
    return name;
}

// Whether relid lies in a schema of the pg_repack extension: its work
// tables (repack.table_<oid>, the copy whose files are swapped into the
// original's; repack.log_<oid>) are not the user's tables, and the original
// stays fenced. Auto-protecting the copy would fence the replay of the
// original's changes, which carry no token (a replayed DELETE under
// require_token is TF002), with the wrong policy (row scope, for a table
// fenced in resource or table scope): it would stop the repack. Only new
// tables get here: a table already protected keeps its policy in any schema.
bool InRepackSchema(Oid relid) {
    Oid repack = get_extension_oid("pg_repack", true);
    return OidIsValid(repack) &&
           getExtensionOfObject(NamespaceRelationId, get_rel_namespace(relid)) == repack;
}

// pg_partman's template table (template_<schema>_<table> in pg_partman's
// schema): created LIKE the partitioned parent, so it has the fencing_token
// column, but it holds no rows and no write reaches the partitions through
// it (they take their parent's policy). Auto-protection leaves it alone;
// fencing_protect() still fences it if asked to.
bool IsPartmanTemplate(Oid relid) {
    Oid schema = ExtensionSchemaOf("pg_partman");
    return OidIsValid(schema) && get_rel_namespace(relid) == schema &&
           strncmp(get_rel_name(relid), "template_", strlen("template_")) == 0;
}

// Temporary tables are never fenced: their drop at session end fires no
// event trigger, so policy rows would outlive them. One with a
// fencing_token column is said to be unfenced (it would otherwise be fenced
// automatically). Nor are the extension's own tables fenced.
bool NeverFenced(Oid relid) {
    if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP) {
        char token[NAMEDATALEN];
        if (AutoProtectEnabled() && TokenColumns(relid, token) > 0)
            ereport(
                NOTICE,
                (errmsg("temporary table %s is not fenced", quote_identifier(get_rel_name(relid))),
                 errdetail("Temporary tables are never fenced: writes to it are not judged "
                           "by any token, and its fencing_token column \"%s\" is an "
                           "ordinary column.",
                           token),
                 errhint("Use a regular table for rows whose writes must be fenced.")));
        return true;
    }
    return get_rel_namespace(relid) == ExtensionSchemaOid(true);
}

// A protected table's policy names its columns; the guard on leaf keeps
// their attnums, which renames keep. Follows them: the policy ends when the
// token column was retyped to a non-token type or a policy column dropped,
// and takes the new names after a rename. False when the columns are still
// as the policy names them.
bool FollowPolicyColumns(Oid relid, Oid leaf, const Policy &policy, ProtectedRow *row) {
    char *token = LiveAttName(leaf, policy.token_attnum);
    char *resource =
        policy.resource_attnum > 0 ? LiveAttName(leaf, policy.resource_attnum) : nullptr;
    Oid token_type = token != nullptr ? get_atttype(leaf, policy.token_attnum) : InvalidOid;
    if (token != nullptr && !IsTokenColumnType(token_type)) {
        ereport(NOTICE,
                (errmsg("table %s is no longer fenced: its token column \"%s\" is now of type %s",
                        RelName(relid), token, format_type_be(token_type))));
        DeleteProtectedRow(relid);
        return true;
    }
    if (token == nullptr || (policy.resource_attnum > 0 && resource == nullptr)) {
        ereport(NOTICE, (errmsg("table %s is no longer fenced: its %s column was dropped",
                                RelName(relid), token == nullptr ? "token" : "resource")));
        DeleteProtectedRow(relid);
        return true;
    }
    if (strcmp(token, row->token_column) == 0 &&
        (resource == nullptr || strcmp(resource, row->resource_column) == 0))
        return false;
    strlcpy(row->token_column, token, NAMEDATALEN);
    if (resource != nullptr)
        strlcpy(row->resource_column, resource, NAMEDATALEN);
    WriteProtectedRow(*row);
    return true;
}

// A protected table after DDL: its policy follows its columns, or else its
// guards are synced (e.g. a partition attached).
void FollowPolicy(Oid relid, ProtectedRow *row) {
    // No lock on the leaves here: see SyncTouchedGuards.
    List *guarded = GuardedRelations(relid, NoLock);
    Policy policy;
    if (guarded != NIL && GuardPolicyUnlocked(linitial_oid(guarded), &policy) &&
        FollowPolicyColumns(relid, linitial_oid(guarded), policy, row))
        return;
    SyncTouchedGuards(relid);
}

// A table whose state fencing_transfer_state() handed on: it refuses every
// write (its zz_fencing_swapped_out trigger) and is not fenced again.
bool IsSwappedOut(Oid relid) {
    return OidIsValid(get_trigger_oid(relid, "zz_fencing_swapped_out", true));
}

// Whether a table that is not protected, nor a partition of one, is fenced
// automatically: fencing.auto_protect is on and it has exactly one
// fencing_token column (its name in row). A NOTICE says why a table with
// the column is left alone. A pg_repack work table never is.
bool WantsAutoProtection(Oid relid, ProtectedRow *row) {
    if (!AutoProtectEnabled() || InRepackSchema(relid) || IsSwappedOut(relid))
        return false;
    memset(row, 0, sizeof(*row));
    int n = TokenColumns(relid, row->token_column);
    if (n == 0)
        return false;
    Oid below = ProtectedDescendant(relid);
    if (OidIsValid(below)) {
        ereport(NOTICE,
                (errmsg("table %s is not fenced automatically: its partition %s is protected "
                        "on its own",
                        RelName(relid), RelName(below)),
                 errdetail("%s keeps its own tombstones and high-water marks, which %s would "
                           "not see as their fenced table.",
                           RelName(below), RelName(relid)),
                 errhint("Detach %s, call fencing_protect(%s), then attach %s again: ATTACH "
                         "carries its state over.",
                         RelName(below), quote_literal_cstr(RelName(relid)), RelName(below))));
        return false;
    }
    if (IsCitusMetadataTable(relid)) {
        ereport(NOTICE, (errmsg("table %s is not fenced automatically: it is the coordinator's "
                                "table of a Citus table",
                                RelName(relid)),
                         errdetail("It holds no rows; each worker fences its shards as Citus "
                                   "creates them (docs/citus.md).")));
        return false;
    }
    if (IsPartmanTemplate(relid)) {
        ereport(NOTICE, (errmsg("table %s is not fenced automatically: it is pg_partman's "
                                "template table",
                                RelName(relid)),
                         errdetail("It holds no rows; the partitions pg_partman creates take "
                                   "their parent's policy.")));
        return false;
    }
    if (n > 1) {
        ereport(NOTICE,
                (errmsg("table %s is not fenced automatically: it has %d fencing_token columns",
                        RelName(relid), n),
                 errhint("Call fencing_protect() with token_column => '...'.")));
        return false;
    }
    return true;
}

// Protects relid in row scope with the defaults, by its token column in row.
void AutoProtect(Oid relid, ProtectedRow *row) {
    row->relid = relid;
    row->scope = Scope::kRow;
    row->on_stale = OnStale::kError;
    // Fail closed: the default the installed SQL gives require_token (its
    // update scripts leave tables protected before as they were).
    row->require_token = RequireTokenByDefault();
    row->resource_namespace = pstrdup("");
    RequireCanonicalRowKeyOf(relid);
    RequireTombstoneKeysFitRows(relid);
    // A table created in replica mode is being restored (docs/operations.md):
    // fenced by this default policy, its dumped policy and state unknown
    // until fencing's data arrives (lifting the mark), if it does.
    if (SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA)
        SetRestoredMark(relid,
                        "The table was created while restoring (session_replication_role = "
                        "replica) and fenced by auto-protection; its dumped policy and its "
                        "high-water marks outside its rows (tombstones, table and resource "
                        "HWMs, floors) did not come with it: the dump had no fencing data.");
    WriteProtectedRow(*row);
}

// DDL hook, for one table created or altered by the current command.
void OnTableDdl(Oid relid) {
    char kind = get_rel_relkind(relid);
    if (kind == RELKIND_FOREIGN_TABLE && OidIsValid(ProtectedAncestor(relid)))
        RefuseForeignPartition(relid);
    if ((kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE) || NeverFenced(relid))
        return;
    ProtectedRow row;
    Oid ancestor;
    if (ReadProtectedRow(relid, &row))
        FollowPolicy(relid, &row);
    else if (OidIsValid(ancestor = ProtectedAncestor(relid)))
        SyncTouchedGuards(ancestor);
    else if (WantsAutoProtection(relid, &row))
        AutoProtect(relid, &row);
}

}  // namespace
}  // namespace fencing::pg

using namespace fencing::pg;

// AFTER INSERT OR UPDATE OR DELETE ON fencing.protected, ENABLE ALWAYS.
FENCING_FUNCTION(fencing_protected_sync) {
    TriggerData *td = TriggerCallData(fcinfo, "fencing.protected_sync()");
    // Only as installed: AFTER ROW on fencing.protected (a superuser could
    // attach it elsewhere, or FOR EACH STATEMENT, with no rows to read).
    Oid nsp = ExtensionSchemaOid(true);
    if (!TRIGGER_FIRED_AFTER(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
        TRIGGER_FIRED_BY_TRUNCATE(td->tg_event) || !OidIsValid(nsp) ||
        RelationGetRelid(td->tg_relation) != get_relname_relid("protected", nsp))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("fencing.protected_sync() must be fired as an AFTER ROW trigger "
                               "on fencing.protected")));
    TupleDesc desc = RelationGetDescr(td->tg_relation);
    bool isnull;
    Oid old_relid = InvalidOid, new_relid = InvalidOid;
    if (!TRIGGER_FIRED_BY_INSERT(td->tg_event))
        old_relid = DatumGetObjectId(heap_getattr(td->tg_trigtuple, 1, desc, &isnull));
    if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
        new_relid = DatumGetObjectId(heap_getattr(td->tg_trigtuple, 1, desc, &isnull));
    if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
        new_relid = DatumGetObjectId(heap_getattr(td->tg_newtuple, 1, desc, &isnull));
    InternalSession access;
    BeginInternal(&access);
    if (OidIsValid(old_relid) && old_relid != new_relid)
        SyncGuards(old_relid);
    if (OidIsValid(new_relid))
        SyncGuards(new_relid);
    EndInternal(&access);
    return NullPointerDatum();
}

// BEFORE INSERT ON fencing.protected, ENABLE ALWAYS: the tree's policy lock
// before the row (or the row it conflicts with) is locked (LockPolicyTree).
FENCING_FUNCTION(fencing_protected_lock_tree) {
    TriggerData *td = TriggerCallData(fcinfo, "fencing.protected_lock_tree()");
    if (!TRIGGER_FIRED_BEFORE(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
        !TRIGGER_FIRED_BY_INSERT(td->tg_event))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("fencing.protected_lock_tree() must be fired as a BEFORE INSERT "
                               "row trigger")));
    bool isnull;
    Datum relid = heap_getattr(td->tg_trigtuple, 1, RelationGetDescr(td->tg_relation), &isnull);
    if (!isnull && SearchSysCacheExists1(RELOID, relid))
        LockPolicyTree(DatumGetObjectId(relid));
    return PointerGetDatum(td->tg_trigtuple);
}

// Called by the ddl_command_end event trigger for each table a command created
// or altered. Not granted to PUBLIC.
FENCING_FUNCTION(fencing_on_table_ddl) {
    Oid relid = PG_GETARG_OID(0);
    if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
        PG_RETURN_VOID();
    InternalSession access;
    BeginInternal(&access);
    OnTableDdl(relid);
    CheckAfterTableDdl(relid);
    EndInternal(&access);
    PG_RETURN_VOID();
}
