// A subscriber's fenced tables are written by its subscription only.
//
// While an enabled subscription of this database replicates a protected
// table into it, a local write to that table would conflict with the
// publisher's fenced writes: apply does not fire the guards
// (session_replication_role = replica), so a later applied write of the
// publisher overwrites it, with whatever token it carried there. Such local
// writes, and resets of the replicated state tables, are refused (55000)
// until the subscription is disabled or dropped (the server is promoted).
// The apply and table sync workers never reach these checks: guards do not
// fire in replica mode.
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "utils/relcache.h"
}

namespace fencing::pg {

// The syscache callbacks on pg_subscription and pg_subscription_rel;
// registered once, from _PG_init.
void RegisterSubscriberCallbacks();

// For module.cpp's relcache callback. Every relation's entry is forgotten,
// whatever relid is: attaching a partitioned table changes the ancestors of
// partitions below it whose own relcache entries are not invalidated.
void ForgetReplicatedRelations(Oid relid);

// The name of an enabled subscription of this database that replicates
// relid (or, for a partition, one of its ancestors) into it, or nullptr.
// Cached per backend and relation; with no enabled subscription in this
// database, a cache hit on one flag.
const char *SubscriptionReplicating(Relation rel);

// Refuses a local write to rel, a table protected by home, while a
// subscription replicates it (the guards, before anything is written).
void RefuseWriteOnSubscriber(Relation rel, Oid home);

// Refuses a reset (what deletes high-water marks, tombstones or leases)
// of fencing.<state_table> while a subscription replicates that table.
void RefuseResetOnSubscriber(const char *state_table, const char *what);

// Refuses issuing, renewing or ending a lease here (what: "acquire a lease")
// while a subscription replicates fencing.lease: the publisher issues the
// same resources' tokens.
void RefuseLeaseOnSubscriber(const char *what);

}  // namespace fencing::pg
