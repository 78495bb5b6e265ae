// Server-free core: what the extension refuses on a Citus cluster, where
// its state (HWMs, tombstones, leases) is per node and keyed by one node's
// table OIDs, so a write or a lease that another node judges would be
// silently unfenced.
#pragma once

#include "core/policy.hpp"

namespace fencing {

// The node this backend runs on.
enum class CitusRole {
    kAbsent,       // no Citus in this database
    kCoordinator,  // local group 0: the one lease authority
    kWorker,       // any other group
};

// What Citus makes of a table.
enum class CitusTable {
    kPlain,        // not a Citus table (nor a shard of one)
    kLocal,        // a Citus local table: one placement, on the coordinator
    kReference,    // one placement per node, written in one 2PC transaction
    kDistributed,  // hash/range/append: one shard per key range, shards move
};

// The operations the rules tell apart.
enum class CitusAction {
    kLease,            // acquire, acquire_all, renew, release, check
    kResourceAdvance,  // fencing_resource_advance: a lease namespace's HWM
    kAdvance,          // fencing_advance(table, …): a table's own state
    kProtect,          // fencing_protect(table, scope => …)
    kWrite,            // a guarded write (the guard trigger)
    kHighWaterRead,    // fencing_high_water(table, …)
    kShardMove,        // a shard published for a move, or copied by a blocking move or split
    kTombstoneWrite,   // a tombstone written, or a tombstone floor raised, on this node
    kReshape,          // undistribute_table(), alter_distributed_table(), alter_table_set_access_method()
    kUnjudgedCopy,     // a Citus copy or rebuild function called without a constant table
    kFencedCall,       // fenced_delete() and the fenced_*_result() forms
    kFencedCallRouted, // fenced_update(), fenced_upsert(): the token travels in the row
    kDistribute,       // fencing_distribute(): `table` is what the table becomes
};

struct CitusFacts {
    CitusRole role = CitusRole::kAbsent;
    CitusAction action = CitusAction::kWrite;
    CitusTable table = CitusTable::kPlain;  // the table acted on, if any
    bool shard = false;                     // the table is a shard (placement) of `table`
    Scope scope = Scope::kRow;              // kProtect, kWrite: the policy's scope
    // kShardMove: the shard has row tombstones or a floor. kDistribute: the
    // table has state outside its rows on this node (tombstones, a floor, a
    // table HWM). kReshape: the table is fenced (has a token column), so its
    // shards may keep tombstones.
    bool tombstones = false;
    // kTombstoneWrite: the shard is a member of a publication (a logical
    // move or split is copying it).
    bool published = false;
    // kDistribute: the table's policy differs from what auto-protection
    // gives each shard (strict, on_stale, require_token, another scope).
    bool custom_policy = false;
};

// Why an operation is refused: errmsg, errdetail and errhint texts (no
// format directives). All three are set on a refusal.
struct CitusRefusal {
    const char *message;
    const char *detail;
    const char *hint;
};

// nullptr when the operation is sound on this node; else why not.
const CitusRefusal *JudgeOnCitus(const CitusFacts &facts) noexcept;

// Citus's pg_dist_partition.partmethod and repmodel of a table: 'n'/'t' is a
// reference table, 'n'/other a Citus local table, anything else distributed.
CitusTable CitusTableOf(char partmethod, char repmodel) noexcept;

}  // namespace fencing
