// Refusing local writes and resets on a subscriber (pg/catalog/subscriber.hpp).
//
// Two per-backend caches, both dropped by the syscache callbacks on
// pg_subscription (SUBSCRIPTIONOID) and pg_subscription_rel
// (SUBSCRIPTIONRELMAP), and the per-relation one also by every relcache
// invalidation (ForgetReplicatedRelations, from module.cpp's relcache
// callback: a partition attached or detached changes its ancestors):
//   * the enabled subscriptions of this database (usually none: then no
//     relation is looked up at all);
//   * per relation, the subscription replicating it, if any.
// A lookup that saw an invalidation arrive while it ran is used but not
// cached.
#include "pg/catalog/subscriber.hpp"
#include "pg/base/compat.hpp"

#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_subscription.h"
#include "catalog/pg_subscription_rel.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace fencing::pg {
namespace {

struct EnabledSubscription {
    Oid oid;
    char name[NAMEDATALEN];
};

struct ReplicatedEntry {
    Oid relid;         // hash key
    int subscription;  // index into enabled[], or -1
};

uint64 invalidations = 0;
bool enabled_known = false;
int n_enabled = 0;
EnabledSubscription *enabled = nullptr;  // TopMemoryContext
HTAB *replicated = nullptr;

void ForgetRelations() {
    if (replicated != nullptr) {
        hash_destroy(replicated);
        replicated = nullptr;
    }
}

void ForgetSubscriptions(Datum, SysCacheCallbackId, uint32) {
    ++invalidations;
    enabled_known = false;
    ForgetRelations();
}

void ForgetRelationsCallback(Datum, SysCacheCallbackId, uint32) {
    ++invalidations;
    ForgetRelations();
}

// pg_subscription is small and shared: a scan of it, keeping this
// database's enabled rows (the fixed-width columns only: subconninfo is
// not read).
void LoadEnabledSubscriptions() {
    uint64 seen = invalidations;
    Relation catalog = table_open(SubscriptionRelationId, AccessShareLock);
    SysScanDesc scan = systable_beginscan(catalog, InvalidOid, false, nullptr, 0, nullptr);
    int n = 0, size = 4;
    auto *found = static_cast<EnabledSubscription *>(
        MemoryContextAlloc(TopMemoryContext, size * sizeof(EnabledSubscription)));
    HeapTuple tuple;
    while (HeapTupleIsValid(tuple = systable_getnext(scan))) {
        auto *sub = reinterpret_cast<Form_pg_subscription>(GETSTRUCT(tuple));
        if (sub->subdbid != MyDatabaseId || !sub->subenabled)
            continue;
        if (n == size) {
            size *= 2;
            found = static_cast<EnabledSubscription *>(
                repalloc(found, size * sizeof(EnabledSubscription)));
        }
        found[n].oid = sub->oid;
        strlcpy(found[n].name, NameStr(sub->subname), NAMEDATALEN);
        ++n;
    }
    systable_endscan(scan);
    table_close(catalog, AccessShareLock);
    if (enabled != nullptr)
        pfree(enabled);
    enabled = found;
    n_enabled = n;
    enabled_known = seen == invalidations;
}

// The enabled subscription (index into enabled[]) replicating relid itself.
int SubscriptionOf(Oid relid) {
    for (int i = 0; i < n_enabled; ++i)
        if (SearchSysCacheExists2(SUBSCRIPTIONRELMAP, ObjectIdGetDatum(relid),
                                  ObjectIdGetDatum(enabled[i].oid)))
            return i;
    return -1;
}

int LookUp(Relation rel) {
    Oid relid = RelationGetRelid(rel);
    int found = SubscriptionOf(relid);
    if (found < 0 && rel->rd_rel->relispartition) {
        List *ancestors = get_partition_ancestors(relid);
        ListCell *lc;
        foreach (lc, ancestors) {
            found = SubscriptionOf(lfirst_oid(lc));
            if (found >= 0)
                break;
        }
        list_free(ancestors);
    }
    return found;
}

// Whether this database has an enabled subscription (usually not: then no
// relation needs looking up).
bool AnyEnabledSubscription() {
    if (!enabled_known)
        LoadEnabledSubscriptions();
    return n_enabled > 0;
}

}  // namespace

void RegisterSubscriberCallbacks() {
    CacheRegisterSyscacheCallback(SUBSCRIPTIONOID, ForgetSubscriptions, 0);
    CacheRegisterSyscacheCallback(SUBSCRIPTIONRELMAP, ForgetRelationsCallback, 0);
}

void ForgetReplicatedRelations(Oid) {
    // Counted even with nothing cached: a lookup in flight must not cache
    // what it read before the invalidation.
    ++invalidations;
    ForgetRelations();
}

const char *SubscriptionReplicating(Relation rel) {
    if (!AnyEnabledSubscription())
        return nullptr;
    Oid relid = RelationGetRelid(rel);
    if (replicated != nullptr) {
        auto *entry =
            static_cast<ReplicatedEntry *>(hash_search(replicated, &relid, HASH_FIND, nullptr));
        if (entry != nullptr)
            return entry->subscription < 0 ? nullptr : enabled[entry->subscription].name;
    }
    uint64 seen = invalidations;
    int found = LookUp(rel);
    // The names are copied: an invalidation during the lookup may replace enabled[].
    const char *name = found < 0 ? nullptr : pstrdup(enabled[found].name);
    if (seen != invalidations || !enabled_known)
        return name;
    if (replicated == nullptr) {
        HASHCTL ctl;
        ctl.keysize = sizeof(Oid);
        ctl.entrysize = sizeof(ReplicatedEntry);
        replicated = hash_create("fencing replicated tables", 16, &ctl, HASH_ELEM | HASH_BLOBS);
    }
    bool exists;
    auto *entry =
        static_cast<ReplicatedEntry *>(hash_search(replicated, &relid, HASH_ENTER, &exists));
    entry->subscription = found;
    return name;
}

void RefuseWriteOnSubscriber(Relation rel, Oid home) {
    const char *subscription = SubscriptionReplicating(rel);
    if (subscription == nullptr)
        return;
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("table %s is replicated into this database by subscription \"%s\"",
                           RelName(home), subscription),
                    errdetail("Writes on a subscriber would conflict with the publisher's fenced "
                              "writes and be overwritten by them: logical replication applies the "
                              "publisher's writes without checking their tokens here."),
                    errhint("Write on the publisher; to promote this server, disable or drop the "
                            "subscription first (ALTER SUBSCRIPTION ... DISABLE).")));
}

namespace {

// The subscription replicating fencing.<state_table>, or nullptr.
const char *StateTableSubscription(const char *state_table) {
    if (!AnyEnabledSubscription())
        return nullptr;
    Oid nsp = ExtensionSchemaOid(true);
    Oid relid = OidIsValid(nsp) ? get_relname_relid(state_table, nsp) : InvalidOid;
    if (!OidIsValid(relid))
        return nullptr;
    Relation rel = table_open(relid, AccessShareLock);
    const char *subscription = SubscriptionReplicating(rel);
    table_close(rel, AccessShareLock);
    return subscription;
}

}  // namespace

void RefuseLeaseOnSubscriber(const char *what) {
    const char *subscription = StateTableSubscription("lease");
    if (subscription == nullptr)
        return;
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("cannot %s: fencing.lease is replicated into this database by subscription "
                    "\"%s\"",
                    what, subscription),
             errdetail("The publisher keeps issuing tokens for its resources: a token issued "
                       "here would be issued there again to another holder, and a lease ended "
                       "here is still live there."),
             errhint("Acquire, renew and release leases on the publisher; to promote this "
                     "server, disable or drop the subscription first (ALTER SUBSCRIPTION ... "
                     "DISABLE).")));
}

void RefuseResetOnSubscriber(const char *state_table, const char *what) {
    const char *subscription = StateTableSubscription(state_table);
    if (subscription == nullptr)
        return;
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("cannot %s: fencing.%s is replicated into this database by subscription \"%s\"",
                    what, state_table, subscription),
             errdetail("A reset on a subscriber deletes rows the publisher's later raises "
                       "update: logical replication skips an UPDATE of a missing row, and the "
                       "raise would be lost here."),
             errhint("Reset on the publisher (resets are per cluster: it does not travel "
                     "either, so reset on each cluster that keeps the state once it is "
                     "promoted or no longer subscribes).")));
}

}  // namespace fencing::pg
