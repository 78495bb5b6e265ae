// What Citus makes of this node and of a table: the facts the Citus refusal
// rules (core/citus.hpp) judge. Without Citus in the database every answer
// is "absent" at the cost of one syscache lookup.
#pragma once

#include "core/citus.hpp"
#include "pg/base/pg.hpp"

namespace fencing::pg {

// This backend's node: absent, the coordinator (local group 0) or a worker.
// Read once per transaction, not cached longer: citus_add_node turns a node
// into a worker with a plain UPDATE of pg_dist_local_group, which sends no
// invalidation.
CitusRole CitusNodeRole();

// What Citus makes of relid, and whether relid is a shard (a placement) of
// that table rather than the table itself. Cached per relation for the
// transaction (a shard's metadata may commit after the shard is created) and
// dropped by every relcache invalidation of the relation (Citus invalidates
// a table's relcache entry when it distributes or undistributes it).
CitusTable CitusTableKind(Oid relid, bool *shard);

// Whether relid is the logical table of a distributed or reference table
// (the coordinator's table, or its shell on a worker): it holds no rows.
bool IsCitusMetadataTable(Oid relid);

// Refuses (0A000) what JudgeOnCitus refuses for facts the caller gathered;
// relid (InvalidOid: none) is named in the message.
void RefuseJudged(const CitusFacts &facts, Oid relid);

// Refuses (0A000) a tombstone write or a floor raise for home_relid when it
// is a shard of a distributed table and a member of any publication: a
// logical move or split is copying it, and would leave the tombstone behind.
// The answer is cached for the transaction and the relation (the last one
// asked) and dropped by its relcache invalidation, which adding it to a
// publication sends; without Citus it costs one syscache lookup per
// transaction and relation.
void RefuseTombstoneWhilePublished(Oid home_relid);

// Whether a fenced_*() call on relid is answered by routing its statement
// to the shard: relid is the coordinator's table of a distributed or
// reference table. Refuses (0A000) the calls that cannot be answered there;
// routable: the call writes its token into the row (update, upsert), which
// the shard's guard then judges. False at the cost of one syscache lookup
// without Citus.
bool CitusRoutesFencedCall(Oid relid, bool routable);

// For module.cpp's relcache callback (InvalidOid: everything).
void ForgetCitusTables(Oid relid);

// Refuses (0A000, with the rule's DETAIL and HINT) what JudgeOnCitus refuses
// for this node, the table relid (InvalidOid: none) and the policy scope;
// tombstones: the table has row tombstones (kShardMove).
void RefuseOnCitus(CitusAction action, Oid relid, Scope scope, bool tombstones = false);

}  // namespace fencing::pg
