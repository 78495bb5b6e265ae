// Unit tests for the Citus refusal rules (core/citus.hpp): what runs on a
// coordinator, what a worker refuses, which scopes a distributed table takes.
#include <gtest/gtest.h>

#include <string>

#include "core/citus.hpp"

using fencing::CitusAction;
using fencing::CitusFacts;
using fencing::CitusRole;
using fencing::CitusTable;
using fencing::CitusTableOf;
using fencing::JudgeOnCitus;
using fencing::Scope;

namespace {

CitusFacts Facts(CitusRole role, CitusAction action, CitusTable table = CitusTable::kPlain,
                 bool shard = false, Scope scope = Scope::kRow) {
    CitusFacts f;
    f.role = role;
    f.action = action;
    f.table = table;
    f.shard = shard;
    f.scope = scope;
    return f;
}

const CitusRole kRoles[] = {CitusRole::kAbsent, CitusRole::kCoordinator, CitusRole::kWorker};
const CitusTable kTables[] = {CitusTable::kPlain, CitusTable::kLocal, CitusTable::kReference,
                              CitusTable::kDistributed};
const Scope kScopes[] = {Scope::kRow, Scope::kResource, Scope::kTable};
const CitusAction kActions[] = {
    CitusAction::kLease,     CitusAction::kResourceAdvance, CitusAction::kAdvance,
    CitusAction::kProtect,   CitusAction::kWrite,           CitusAction::kHighWaterRead,
    CitusAction::kShardMove, CitusAction::kFencedCall,      CitusAction::kDistribute,
    CitusAction::kTombstoneWrite, CitusAction::kReshape,    CitusAction::kUnjudgedCopy,
    CitusAction::kFencedCallRouted};

}  // namespace

TEST(CitusTableOf, FromPartitionMetadata) {
    EXPECT_EQ(CitusTableOf('h', 's'), CitusTable::kDistributed);
    EXPECT_EQ(CitusTableOf('r', 'c'), CitusTable::kDistributed);
    EXPECT_EQ(CitusTableOf('a', 'c'), CitusTable::kDistributed);
    EXPECT_EQ(CitusTableOf('n', 't'), CitusTable::kReference);
    EXPECT_EQ(CitusTableOf('n', 's'), CitusTable::kLocal);
}

TEST(JudgeOnCitus, WithoutCitusNothingIsRefused) {
    for (CitusAction a : kActions) {
        if (a == CitusAction::kDistribute)
            continue;  // it needs Citus (DistributeOnTheCoordinator...)
        for (CitusTable t : kTables)
            for (Scope s : kScopes)
                for (bool shard : {false, true})
                    EXPECT_EQ(JudgeOnCitus(Facts(CitusRole::kAbsent, a, t, shard, s)), nullptr);
    }
}

TEST(JudgeOnCitus, LeasesOnlyOnTheCoordinator) {
    for (CitusAction a : {CitusAction::kLease, CitusAction::kResourceAdvance}) {
        EXPECT_EQ(JudgeOnCitus(Facts(CitusRole::kCoordinator, a)), nullptr);
        const auto *r = JudgeOnCitus(Facts(CitusRole::kWorker, a));
        ASSERT_NE(r, nullptr);
        EXPECT_NE(r->detail, nullptr);
        EXPECT_NE(r->hint, nullptr);
        EXPECT_NE(std::string(r->hint).find("coordinator"), std::string::npos);
    }
}

TEST(JudgeOnCitus, AdvanceRefusedOnWorkersAndOnSpreadTables) {
    for (CitusTable t : kTables) {
        EXPECT_NE(JudgeOnCitus(Facts(CitusRole::kWorker, CitusAction::kAdvance, t)), nullptr);
        EXPECT_NE(JudgeOnCitus(Facts(CitusRole::kWorker, CitusAction::kAdvance, t, true)), nullptr);
    }
    EXPECT_EQ(JudgeOnCitus(Facts(CitusRole::kCoordinator, CitusAction::kAdvance)), nullptr);
    EXPECT_EQ(
        JudgeOnCitus(Facts(CitusRole::kCoordinator, CitusAction::kAdvance, CitusTable::kLocal)),
        nullptr);
    EXPECT_NE(JudgeOnCitus(
                  Facts(CitusRole::kCoordinator, CitusAction::kAdvance, CitusTable::kDistributed)),
              nullptr);
    EXPECT_NE(
        JudgeOnCitus(Facts(CitusRole::kCoordinator, CitusAction::kAdvance, CitusTable::kReference)),
        nullptr);
}

TEST(JudgeOnCitus, SharedScopesRefusedOnDistributedTablesAndShards) {
    for (CitusRole role : {CitusRole::kCoordinator, CitusRole::kWorker})
        for (CitusAction a : {CitusAction::kProtect, CitusAction::kWrite})
            for (bool shard : {false, true}) {
                // Row scope: on a shard, and at write time; the coordinator's own
                // table is never protected (TheCoordinatorsMetadataTableIsNotProtected).
                if (shard || a == CitusAction::kWrite) {
                    EXPECT_EQ(
                        JudgeOnCitus(Facts(role, a, CitusTable::kDistributed, shard, Scope::kRow)),
                        nullptr);
                }
                for (Scope s : {Scope::kResource, Scope::kTable}) {
                    EXPECT_NE(JudgeOnCitus(Facts(role, a, CitusTable::kDistributed, shard, s)),
                              nullptr);
                    // Every placement in one 2PC transaction: table scope holds;
                    // resource scope does not (a lease fences on the coordinator only).
                    if (s == Scope::kResource) {
                        EXPECT_NE(JudgeOnCitus(Facts(role, a, CitusTable::kReference, shard, s)),
                                  nullptr);
                    } else if (shard || a == CitusAction::kWrite) {
                        EXPECT_EQ(JudgeOnCitus(Facts(role, a, CitusTable::kReference, shard, s)),
                                  nullptr);
                    }
                    EXPECT_EQ(JudgeOnCitus(Facts(role, a, CitusTable::kLocal, shard, s)), nullptr);
                    EXPECT_EQ(JudgeOnCitus(Facts(role, a, CitusTable::kPlain, shard, s)), nullptr);
                }
            }
}

TEST(JudgeOnCitus, TheCoordinatorsMetadataTableIsNotProtected) {
    for (CitusRole role : {CitusRole::kCoordinator, CitusRole::kWorker})
        for (CitusTable t : {CitusTable::kDistributed, CitusTable::kReference})
            for (Scope s : kScopes) {
                EXPECT_NE(JudgeOnCitus(Facts(role, CitusAction::kProtect, t, false, s)), nullptr);
                // A write never reaches it (Citus routes writes to the shards).
                if (s == Scope::kRow) {
                    EXPECT_EQ(JudgeOnCitus(Facts(role, CitusAction::kWrite, t, false, s)), nullptr);
                }
            }
    EXPECT_EQ(JudgeOnCitus(Facts(CitusRole::kCoordinator, CitusAction::kProtect, CitusTable::kLocal,
                                 false, Scope::kResource)),
              nullptr);
}

TEST(JudgeOnCitus, HighWaterAndFencedCallsOnTheCoordinatorsMetadataTableRefused) {
    for (CitusAction a : {CitusAction::kHighWaterRead, CitusAction::kFencedCall})
        for (CitusRole role : {CitusRole::kCoordinator, CitusRole::kWorker}) {
            for (CitusTable t : {CitusTable::kDistributed, CitusTable::kReference}) {
                EXPECT_NE(JudgeOnCitus(Facts(role, a, t)), nullptr);
                EXPECT_EQ(JudgeOnCitus(Facts(role, a, t, true)), nullptr);
            }
            EXPECT_EQ(JudgeOnCitus(Facts(role, a, CitusTable::kPlain)), nullptr);
            EXPECT_EQ(JudgeOnCitus(Facts(role, a, CitusTable::kLocal)), nullptr);
        }
}

TEST(JudgeOnCitus, RoutedFencedCallsAnsweredOnTheCoordinatorOnly) {
    for (CitusTable t : {CitusTable::kDistributed, CitusTable::kReference}) {
        EXPECT_EQ(JudgeOnCitus(Facts(CitusRole::kCoordinator, CitusAction::kFencedCallRouted, t)),
                  nullptr);
        EXPECT_NE(JudgeOnCitus(Facts(CitusRole::kWorker, CitusAction::kFencedCallRouted, t)),
                  nullptr);
        EXPECT_EQ(JudgeOnCitus(Facts(CitusRole::kWorker, CitusAction::kFencedCallRouted, t, true)),
                  nullptr);
    }
    for (CitusTable t : {CitusTable::kPlain, CitusTable::kLocal})
        for (CitusRole role : kRoles)
            EXPECT_EQ(JudgeOnCitus(Facts(role, CitusAction::kFencedCallRouted, t)), nullptr);
}

// action is refused on a distributed table's shard exactly when the fact
// `flag` holds: not on the table itself, a reference table's copy, a plain
// table, nor without Citus.
void ExpectRefusedOnlyOnADistributedShard(CitusAction action, bool CitusFacts::*flag) {
    for (CitusRole role : {CitusRole::kCoordinator, CitusRole::kWorker}) {
        CitusFacts f = Facts(role, action, CitusTable::kDistributed, true);
        EXPECT_EQ(JudgeOnCitus(f), nullptr);
        f.*flag = true;
        EXPECT_NE(JudgeOnCitus(f), nullptr);
        f.shard = false;
        EXPECT_EQ(JudgeOnCitus(f), nullptr);
        f.shard = true;
        for (CitusTable t : {CitusTable::kReference, CitusTable::kPlain}) {
            f.table = t;
            EXPECT_EQ(JudgeOnCitus(f), nullptr);
        }
    }
    CitusFacts absent = Facts(CitusRole::kAbsent, action, CitusTable::kDistributed, true);
    absent.*flag = true;
    EXPECT_EQ(JudgeOnCitus(absent), nullptr);
}

TEST(JudgeOnCitus, ShardMoveRefusedOnlyWithTombstones) {
    ExpectRefusedOnlyOnADistributedShard(CitusAction::kShardMove, &CitusFacts::tombstones);
}

// A tombstone written while a logical move or split publishes the shard.
TEST(JudgeOnCitus, TombstoneWriteRefusedOnlyOnAPublishedShard) {
    ExpectRefusedOnlyOnADistributedShard(CitusAction::kTombstoneWrite, &CitusFacts::published);
}

TEST(JudgeOnCitus, ReshapeRefusedOnAFencedCitusTable) {
    for (CitusTable t : {CitusTable::kDistributed, CitusTable::kReference}) {
        CitusFacts f = Facts(CitusRole::kCoordinator, CitusAction::kReshape, t);
        EXPECT_EQ(JudgeOnCitus(f), nullptr);  // no token column
        f.tombstones = true;
        EXPECT_NE(JudgeOnCitus(f), nullptr);
    }
    CitusFacts local = Facts(CitusRole::kCoordinator, CitusAction::kReshape, CitusTable::kLocal);
    local.tombstones = true;
    EXPECT_EQ(JudgeOnCitus(local), nullptr);
}

TEST(JudgeOnCitus, UnjudgedCopyRefusedWithCitus) {
    for (CitusRole role : {CitusRole::kCoordinator, CitusRole::kWorker})
        EXPECT_NE(JudgeOnCitus(Facts(role, CitusAction::kUnjudgedCopy)), nullptr);
}

TEST(JudgeOnCitus, DistributeOnTheCoordinatorWithoutStateOrCustomPolicy) {
    CitusFacts f =
        Facts(CitusRole::kCoordinator, CitusAction::kDistribute, CitusTable::kDistributed);
    EXPECT_EQ(JudgeOnCitus(f), nullptr);
    f.table = CitusTable::kReference;
    EXPECT_EQ(JudgeOnCitus(f), nullptr);
    // A reference table keeps table scope (every placement in one 2PC
    // transaction), not resource scope (ResourceScopeRefusedOnReferenceTables).
    f.scope = Scope::kTable;
    EXPECT_EQ(JudgeOnCitus(f), nullptr);
    f.table = CitusTable::kDistributed;
    EXPECT_NE(JudgeOnCitus(f), nullptr);
    f.scope = Scope::kRow;
    f.custom_policy = true;
    EXPECT_NE(JudgeOnCitus(f), nullptr);
    f.custom_policy = false;
    f.tombstones = true;
    EXPECT_NE(JudgeOnCitus(f), nullptr);
    f.tombstones = false;
    f.role = CitusRole::kWorker;
    EXPECT_NE(JudgeOnCitus(f), nullptr);
    f.role = CitusRole::kAbsent;
    EXPECT_NE(JudgeOnCitus(f), nullptr);
}

TEST(JudgeOnCitus, ResourceScopeRefusedOnReferenceTables) {
    CitusFacts f = Facts(CitusRole::kCoordinator, CitusAction::kDistribute,
                         CitusTable::kReference, false, Scope::kResource);
    EXPECT_NE(JudgeOnCitus(f), nullptr);
    f.scope = Scope::kTable;
    EXPECT_EQ(JudgeOnCitus(f), nullptr);
    // A worker's copy, written directly: judged by the worker's own resource HWM.
    EXPECT_NE(JudgeOnCitus(Facts(CitusRole::kWorker, CitusAction::kWrite, CitusTable::kReference,
                                 true, Scope::kResource)),
              nullptr);
}

TEST(JudgeOnCitus, EveryRefusalIsComplete) {
    for (CitusRole role : kRoles)
        for (CitusAction a : kActions)
            for (CitusTable t : kTables)
                for (Scope s : kScopes)
                    for (int bits = 0; bits < 16; ++bits) {
                        CitusFacts f = Facts(role, a, t, bits & 1, s);
                        f.tombstones = bits & 2;
                        f.custom_policy = bits & 4;
                        f.published = bits & 8;
                        const auto *r = JudgeOnCitus(f);
                        if (r == nullptr)
                            continue;
                        EXPECT_NE(r->message, nullptr);
                        EXPECT_NE(r->detail, nullptr);
                        EXPECT_NE(r->hint, nullptr);
                        EXPECT_NE(std::string(r->hint).find("docs/citus.md"), std::string::npos);
                    }
}
