// The Citus facts of this node and of a table (pg/catalog/citus_node.hpp).
// Citus's catalog tables are read through SPI in an internal session: they
// have no syscache, and their shape is Citus's, not ours.
#include "pg/catalog/citus_node.hpp"

#include "pg/base/compat.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_publication.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
}

namespace fencing::pg {
namespace {

struct CitusTableEntry {
    Oid relid;  // hash key
    LocalTransactionId lxid;
    CitusTable kind;
    bool shard;
};

HTAB *citus_tables = nullptr;
// RefuseTombstoneWhilePublished's last answer: relid may take tombstones
// in transaction lxid.
struct {
    LocalTransactionId lxid = InvalidLocalTransactionId;
    Oid relid = InvalidOid;
} tombstones_allowed;
// The node's role, read once per transaction.
LocalTransactionId role_lxid = InvalidLocalTransactionId;
CitusRole role = CitusRole::kAbsent;

bool CitusInstalled() {
    return OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE));
}

// Column col (1-based) of the first row the last internal statement read.
Datum FirstRowColumn(int col, bool *isnull) {
    return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, isnull);
}

// The partition metadata row of logical table relid, if any.
bool PartitionMetadata(Oid relid, CitusTable *kind) {
    Oid types[] = {REGCLASSOID};
    Datum values[] = {ObjectIdGetDatum(relid)};
    if (RunInternalSql("SELECT partmethod, repmodel FROM pg_catalog.pg_dist_partition "
                       "WHERE logicalrelid OPERATOR(pg_catalog.=) $1",
                       1, types, values, nullptr, true) == 0)
        return false;
    bool isnull;
    char method = DatumGetChar(FirstRowColumn(1, &isnull));
    char model = DatumGetChar(FirstRowColumn(2, &isnull));
    *kind = CitusTableOf(method, model);
    return true;
}

// A shard is named <table>_<shardid> (the table's part truncated when long)
// in its table's schema; its shard id is in pg_dist_shard.
bool ShardMetadata(Oid relid, CitusTable *kind) {
    const char *name = get_rel_name(relid);
    const char *underscore = name != nullptr ? strrchr(name, '_') : nullptr;
    if (underscore == nullptr || underscore[1] == '\0')
        return false;
    int64 shardid = 0;
    for (const char *p = underscore + 1; *p != '\0'; ++p) {
        if (*p < '0' || *p > '9' || shardid > (PG_INT64_MAX - 9) / 10)
            return false;
        shardid = shardid * 10 + (*p - '0');
    }
    Oid types[] = {INT8OID};
    Datum values[] = {Int64GetDatum(shardid)};
    if (RunInternalSql("SELECT logicalrelid::pg_catalog.oid FROM pg_catalog.pg_dist_shard "
                       "WHERE shardid OPERATOR(pg_catalog.=) $1",
                       1, types, values, nullptr, true) == 0)
        return false;
    bool isnull;
    Oid table = DatumGetObjectId(FirstRowColumn(1, &isnull));
    if (isnull || table == relid || get_rel_namespace(table) != get_rel_namespace(relid))
        return false;
    // <table>_<shardid> in full when it fits (else Citus shortens the table's
    // part): a table of the user's that only ends like a shard is no shard.
    char expected[2 * NAMEDATALEN];
    const char *table_name = get_rel_name(table);
    if (table_name == nullptr)
        return false;
    snprintf(expected, sizeof(expected), "%s_" INT64_FORMAT, table_name, shardid);
    if (strlen(expected) < NAMEDATALEN && strcmp(expected, name) != 0)
        return false;
    return PartitionMetadata(table, kind);
}

CitusTableEntry *Entry(Oid relid, bool *found) {
    if (citus_tables == nullptr) {
        HASHCTL ctl;
        memset(&ctl, 0, sizeof(ctl));
        ctl.keysize = sizeof(Oid);
        ctl.entrysize = sizeof(CitusTableEntry);
        ctl.hcxt = TopMemoryContext;
        citus_tables =
            hash_create("fencing Citus tables", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
    }
    return static_cast<CitusTableEntry *>(hash_search(citus_tables, &relid, HASH_ENTER, found));
}

}  // namespace

CitusRole CitusNodeRole() {
    if (!OidIsValid(get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE)))
        return CitusRole::kAbsent;
    if (role_lxid == CurrentLocalTransactionId())
        return role;
    InternalSession session;
    BeginInternal(&session);
    uint64 n = RunInternalSql("SELECT groupid FROM pg_catalog.pg_dist_local_group", 0, nullptr,
                              nullptr, nullptr, true);
    bool isnull = true;
    int32 group = 0;
    if (n > 0)
        group = DatumGetInt32(FirstRowColumn(1, &isnull));
    EndInternal(&session);
    role = !isnull && group != 0 ? CitusRole::kWorker : CitusRole::kCoordinator;
    role_lxid = CurrentLocalTransactionId();
    return role;
}

CitusTable CitusTableKind(Oid relid, bool *shard) {
    *shard = false;
    if (!OidIsValid(relid) || !CitusInstalled())
        return CitusTable::kPlain;
    bool found;
    CitusTableEntry *entry = Entry(relid, &found);
    if (found && entry->lxid == CurrentLocalTransactionId()) {
        *shard = entry->shard;
        return entry->kind;
    }
    // Not filled in yet: an error below leaves an entry no later call trusts.
    entry->lxid = InvalidLocalTransactionId;
    CitusTable kind = CitusTable::kPlain;
    InternalSession session;
    BeginInternal(&session);
    bool is_shard = false;
    if (!PartitionMetadata(relid, &kind))
        is_shard = ShardMetadata(relid, &kind);
    EndInternal(&session);
    // The hash may have been rebuilt by an invalidation meanwhile.
    entry = Entry(relid, &found);
    entry->kind = kind;
    entry->shard = is_shard;
    entry->lxid = CurrentLocalTransactionId();
    *shard = is_shard;
    return kind;
}

bool IsCitusMetadataTable(Oid relid) {
    bool shard;
    CitusTable kind = CitusTableKind(relid, &shard);
    return !shard && (kind == CitusTable::kDistributed || kind == CitusTable::kReference);
}

void ForgetCitusTables(Oid relid) {
    if (!OidIsValid(relid) || relid == tombstones_allowed.relid)
        tombstones_allowed.lxid = InvalidLocalTransactionId;
    if (citus_tables == nullptr)
        return;
    if (OidIsValid(relid)) {
        (void)hash_search(citus_tables, &relid, HASH_REMOVE, nullptr);
        return;
    }
    hash_destroy(citus_tables);
    citus_tables = nullptr;
}

void RefuseJudged(const CitusFacts &facts, Oid relid) {
    const CitusRefusal *refusal = JudgeOnCitus(facts);
    if (refusal == nullptr)
        return;
    if (OidIsValid(relid))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("%s: %s", RelName(relid), refusal->message),
                        errdetail("%s", refusal->detail), errhint("%s", refusal->hint)));
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("%s", refusal->message),
                    errdetail("%s", refusal->detail), errhint("%s", refusal->hint)));
}

// Whether any publication (by table, by its schema or for all tables)
// includes relid; a FOR ALL TABLES publication that excludes it counts too.
static bool Published(Oid relid) {
    if (PublicationsNamingTable(relid) != NIL || GetAllTablesPublications() != NIL)
        return true;
    return GetSchemaPublications(get_rel_namespace(relid)) != NIL;
}

void RefuseTombstoneWhilePublished(Oid home_relid) {
    if (tombstones_allowed.lxid == CurrentLocalTransactionId() &&
        tombstones_allowed.relid == home_relid)
        return;
    CitusFacts facts;
    facts.action = CitusAction::kTombstoneWrite;
    if (CitusInstalled()) {
        facts.role = CitusNodeRole();
        facts.table = CitusTableKind(home_relid, &facts.shard);
        facts.published = facts.table == CitusTable::kDistributed && facts.shard &&
                          Published(home_relid);
        RefuseJudged(facts, home_relid);
    }
    tombstones_allowed.relid = home_relid;
    tombstones_allowed.lxid = CurrentLocalTransactionId();
}

bool CitusRoutesFencedCall(Oid relid, bool routable) {
    if (!CitusInstalled())
        return false;
    CitusFacts facts;
    facts.role = CitusNodeRole();
    facts.action = routable ? CitusAction::kFencedCallRouted : CitusAction::kFencedCall;
    facts.table = CitusTableKind(relid, &facts.shard);
    RefuseJudged(facts, relid);
    bool spread = facts.table == CitusTable::kDistributed || facts.table == CitusTable::kReference;
    return facts.role == CitusRole::kCoordinator && spread && !facts.shard;
}

void RefuseOnCitus(CitusAction action, Oid relid, Scope scope, bool tombstones) {
    if (!CitusInstalled())
        return;
    CitusFacts facts;
    facts.role = CitusNodeRole();
    facts.action = action;
    facts.scope = scope;
    facts.tombstones = tombstones;
    facts.table = CitusTableKind(relid, &facts.shard);
    RefuseJudged(facts, relid);
}

}  // namespace fencing::pg
