// Server-free core: the Citus refusal rules (core/citus.hpp).
#include "core/citus.hpp"

namespace fencing {
namespace {

constexpr CitusRefusal kLeaseOnWorker = {
    "leases are issued by the Citus coordinator only",
    "This node is a Citus worker: its fencing.lease and resource high-water marks are its own, so "
    "a "
    "token issued or checked here is not fenced against the coordinator's or another worker's.",
    "Call fencing_acquire(), fencing_acquire_all(), fencing_renew(), fencing_release(), "
    "fencing_check() and fencing_resource_advance() on the coordinator; see docs/citus.md."};

constexpr CitusRefusal kAdvanceOnWorker = {
    "fencing_advance() is refused on a Citus worker",
    "This node is a Citus worker: an advance here raises state that no other node reads.",
    "Advance a row-scope key with a fenced write through the coordinator (an UPDATE or DELETE "
    "carrying the token); see docs/citus.md."};

constexpr CitusRefusal kAdvanceCitusTable = {
    "fencing_advance() is refused on a Citus table",
    "The high-water marks and tombstones of a distributed or reference table live with its "
    "shards on the workers; an advance on the coordinator's table raises state no shard reads.",
    "Advance a row-scope key with a fenced write through the coordinator (an UPDATE or DELETE "
    "carrying the token); see docs/citus.md."};

constexpr CitusRefusal kSharedScopeDistributed = {
    "resource and table scope are refused on a Citus distributed table",
    "A resource or table high-water mark would be kept per shard and per node: each worker would "
    "accept writes another refuses, and a shard move would leave it behind.",
    "Protect the distributed table in row scope (the high-water mark lives in the row and moves "
    "with it), or keep the table on one node or make it a reference table; see docs/citus.md."};

constexpr CitusRefusal kResourceScopeReference = {
    "resource scope is refused on a Citus reference table",
    "A lease raises its resource's high-water mark on the coordinator only, and each worker "
    "judges a write to its copy by its own: a write sent to a worker with a token the lease has "
    "already fenced off would be accepted there.",
    "Protect the reference table in row or table scope (every copy is written in one "
    "transaction), or keep it on the coordinator; see docs/citus.md."};

constexpr CitusRefusal kHighWaterCitusTable = {
    "fencing_high_water() is refused on the coordinator's table of a Citus table",
    "The coordinator's table is metadata: its rows and tombstones live in the shards on the "
    "workers, so the coordinator's own state would answer with nothing.",
    "Read the token column of the row through the coordinator, or call fencing_high_water() on "
    "the shard; see docs/citus.md."};

constexpr CitusRefusal kFencedCallCitusTable = {
    "fenced_delete() and the fenced_*_result() functions are refused on the coordinator's table "
    "of a Citus table",
    "The shard's guard on a worker judges the write: a DELETE carries no token in its row for it "
    "to judge, and the worker's refusal does not say how many rows were stale or at which "
    "high-water mark.",
    "Use fenced_update() or fenced_upsert() on the coordinator (a stale token gives 0 rows), or "
    "DELETE with SET LOCAL fencing.token inside BEGIN ... COMMIT and "
    "citus.propagate_set_commands = 'local'; see docs/citus.md."};

constexpr CitusRefusal kFencedCallOnWorkerShell = {
    "fenced_update() and fenced_upsert() on a Citus table run on the coordinator",
    "This node is a Citus worker: the table here is the coordinator's metadata, not a shard.",
    "Call them on the coordinator, which routes the write to the shard; see docs/citus.md."};

constexpr CitusRefusal kProtectCitusShell = {
    "the coordinator's table of a Citus table is not protected itself",
    "It holds no rows: they live in its shards, which each worker protects in row scope as Citus "
    "creates them (fencing.auto_protect). Guards on it would stop create_distributed_table and "
    "break shard moves.",
    "Leave it unprotected; set other policy options on the shards with run_command_on_shards(); "
    "see docs/citus.md."};

constexpr CitusRefusal kMoveWithTombstones = {
    "a shard of a fenced row-scope table that has tombstones cannot be moved or split",
    "Its tombstones (the high-water marks of deleted keys, and its tombstone floor) are kept in "
    "this node's fencing.row_tombstone and fencing.tombstone_floor and do not travel with the "
    "shard, whether it is published (logical move or split) or copied (block_writes move, "
    "blocking split): on the new node a deleted key could be re-inserted with a stale token.",
    "Leave the shard where it is; see docs/citus.md for what moves and what is refused."};

constexpr CitusRefusal kTombstoneWhilePublished = {
    "a tombstone cannot be written on a shard that a logical move or split is copying",
    "The shard is a member of a publication: the move copies its rows but not this node's "
    "fencing.row_tombstone or tombstone floor, so a key deleted now could be re-inserted with a "
    "stale token on the new node.",
    "Retry the DELETE (or the key change) after the shard move or split has finished; or move "
    "shards only while no fenced deletes run; see docs/citus.md."};

constexpr CitusRefusal kReshapeFenced = {
    "a fenced Citus table cannot be rebuilt by undistribute_table(), alter_distributed_table() "
    "or alter_table_set_access_method()",
    "They copy the rows into a new table, but not the tombstones and tombstone floors its shards "
    "keep on the workers: a deleted key could then be re-inserted with a stale token.",
    "Keep the table as it is (shards without tombstones can still be moved and rebalanced); to "
    "change its layout, create a new fenced table and distribute it with fencing_distribute() "
    "before deleting from it; see docs/citus.md."};

constexpr CitusRefusal kUnjudgedCopy = {
    "this Citus function is refused unless its table (or shard id) is a constant",
    "fencing judges worker_copy_table_to_node(), worker_split_copy(), undistribute_table(), "
    "alter_distributed_table() and alter_table_set_access_method() by their first argument "
    "before they run; called with a computed one, it cannot tell whether they would lose "
    "tombstones.",
    "Call it with a literal first argument, as Citus does; see docs/citus.md."};

constexpr CitusRefusal kDistributeWithoutCitus = {
    "fencing_distribute() needs Citus",
    "There is no Citus in this database (pg_dist_local_group is missing).",
    "CREATE EXTENSION citus on every node first; see docs/citus.md."};

constexpr CitusRefusal kDistributeOnWorker = {
    "fencing_distribute() runs on the Citus coordinator",
    "This node is a Citus worker: tables are distributed from the coordinator.",
    "Call it on the coordinator; see docs/citus.md."};

constexpr CitusRefusal kDistributeWithState = {
    "a table with tombstones, a tombstone floor or a table high-water mark cannot be distributed",
    "That state is kept on this node, keyed by this table: its shards would not see it, so a "
    "deleted key could come back with a stale token.",
    "Distribute the table before deleting from it; see docs/citus.md."};

constexpr CitusRefusal kDistributeCustomPolicy = {
    "fencing_distribute() keeps only the default row-scope policy",
    "Each worker protects its shards as Citus creates them (also on moves and splits) with "
    "auto-protection's defaults; strict, on_stale => 'skip', require_token => false or another "
    "scope would be lost on them.",
    "Protect the table with the defaults first (fencing_protect(table)); see docs/citus.md."};

bool Shared(Scope scope) noexcept {
    return scope != Scope::kRow;
}

}  // namespace

CitusTable CitusTableOf(char partmethod, char repmodel) noexcept {
    if (partmethod != 'n')
        return CitusTable::kDistributed;
    return repmodel == 't' ? CitusTable::kReference : CitusTable::kLocal;
}

static const CitusRefusal *JudgeDistribute(const CitusFacts &f) noexcept {
    if (f.role == CitusRole::kAbsent)
        return &kDistributeWithoutCitus;
    if (f.role == CitusRole::kWorker)
        return &kDistributeOnWorker;
    if (f.tombstones)
        return &kDistributeWithState;
    if (f.table == CitusTable::kDistributed && Shared(f.scope))
        return &kSharedScopeDistributed;
    if (f.table == CitusTable::kReference && f.scope == Scope::kResource)
        return &kResourceScopeReference;
    return f.custom_policy ? &kDistributeCustomPolicy : nullptr;
}

const CitusRefusal *JudgeOnCitus(const CitusFacts &f) noexcept {
    if (f.action == CitusAction::kDistribute)
        return JudgeDistribute(f);
    if (f.role == CitusRole::kAbsent)
        return nullptr;
    bool worker = f.role == CitusRole::kWorker;
    // The coordinator's table of a distributed or reference table holds no
    // rows: only its shards do (a local table's shard is on the coordinator).
    bool spread = f.table == CitusTable::kDistributed || f.table == CitusTable::kReference;
    switch (f.action) {
        case CitusAction::kLease:
        case CitusAction::kResourceAdvance:
            return worker ? &kLeaseOnWorker : nullptr;
        case CitusAction::kAdvance:
            if (worker)
                return &kAdvanceOnWorker;
            return spread ? &kAdvanceCitusTable : nullptr;
        case CitusAction::kHighWaterRead:
            return spread && !f.shard ? &kHighWaterCitusTable : nullptr;
        case CitusAction::kFencedCall:
            return spread && !f.shard ? &kFencedCallCitusTable : nullptr;
        case CitusAction::kFencedCallRouted:
            // The coordinator routes the statement to the shard, whose guard
            // judges the token written into the row.
            return spread && !f.shard && worker ? &kFencedCallOnWorkerShell : nullptr;
        case CitusAction::kDistribute:
            break;  // JudgeDistribute
        case CitusAction::kShardMove:
            return f.table == CitusTable::kDistributed && f.shard && f.tombstones
                       ? &kMoveWithTombstones
                       : nullptr;
        case CitusAction::kTombstoneWrite:
            return f.table == CitusTable::kDistributed && f.shard && f.published
                       ? &kTombstoneWhilePublished
                       : nullptr;
        case CitusAction::kReshape:
            return spread && !f.shard && f.tombstones ? &kReshapeFenced : nullptr;
        case CitusAction::kUnjudgedCopy:
            return &kUnjudgedCopy;
        case CitusAction::kProtect:
            // The scope's refusal first: it holds for the shards too.
            if (f.table == CitusTable::kDistributed && Shared(f.scope))
                return &kSharedScopeDistributed;
            if (f.table == CitusTable::kReference && f.scope == Scope::kResource)
                return &kResourceScopeReference;
            return spread && !f.shard ? &kProtectCitusShell : nullptr;
        case CitusAction::kWrite:
            if (f.table == CitusTable::kReference && f.scope == Scope::kResource)
                return &kResourceScopeReference;
            return f.table == CitusTable::kDistributed && Shared(f.scope) ? &kSharedScopeDistributed
                                                                          : nullptr;
    }
    return nullptr;
}

}  // namespace fencing
