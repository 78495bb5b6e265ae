// Module entry: the magic block and load-time initialisation. This file sits
// above every folder: it is the one place that wires the layers together
// (settings, shared memory, and every cache and transaction callback).
#include "pg/hwm/durability.hpp"
#include "pg/ddl/copy_snapshot.hpp"
#include "pg/api/fenced_dml.hpp"
#include "pg/hwm/raise_registry.hpp"
#include "pg/hwm/removed_rows.hpp"
#include "pg/hwm/store.hpp"
#include "pg/keys/tombstone_key.hpp"
#include "pg/base/compat.hpp"
#include "pg/base/guc.hpp"
#include "pg/base/pg.hpp"
#include "pg/base/stats.hpp"
#include "pg/guard/restored.hpp"
#include "pg/guard/unfenced.hpp"
#include "pg/types/token_type.hpp"
#include "pg/api/lease_commit.hpp"
#include "pg/api/takeover.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/catalog/subscriber.hpp"
#include "pg/catalog/citus_node.hpp"
#include "pg/ddl/citus_moves.hpp"
#include "pg/worker/retire_worker.hpp"

extern "C" {
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/inval.h"
}

namespace {

// The one relcache callback of the library (PostgreSQL allows 10 per backend,
// for all extensions together): every per-relation cache is told here.
void ForgetRelation(Datum, Oid relid) {
    fencing::pg::ForgetFencedPlans(relid);
    fencing::pg::ForgetReplicatedRelations(relid);
    fencing::pg::ForgetStoreTables(relid);
    fencing::pg::ForgetCheckedRowKey(relid);
    fencing::pg::ForgetCitusTables(relid);
}

}  // namespace

extern "C" {
FENCING_MODULE_MAGIC;
void _PG_init(void);
}

void _PG_init(void) {
    fencing::pg::DefineSettings();
    fencing::pg::DefineStatsSettings();
    fencing::pg::DefineRetireWorkerSettings();
    fencing::pg::DefineTakeoverSettings();
    MarkGUCPrefixReserved("fencing");
    fencing::pg::RegisterDurabilityCallbacks();
    fencing::pg::RegisterRaiseRegistryCallbacks();
    fencing::pg::RegisterUnfencedCallbacks();
    fencing::pg::RegisterRestoredCallbacks();
    fencing::pg::RegisterTokenTypeCallbacks();
    fencing::pg::RegisterInternalAccessCallbacks();
    fencing::pg::RegisterSubscriberCallbacks();
    fencing::pg::RegisterLeaseCallbacks();
    fencing::pg::RegisterTakeoverHooks();
    fencing::pg::RegisterCopySnapshotHooks();
    fencing::pg::RegisterCitusCopyHooks();
    // Last: its pre-commit writes run before the durability callback looks.
    fencing::pg::RegisterRemovedRowsCallbacks();
    CacheRegisterRelcacheCallback(ForgetRelation, 0);
    if (process_shared_preload_libraries_in_progress)
        fencing::pg::RegisterRetireWorkers();
}
