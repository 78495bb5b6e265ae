// Counters of what fencing turned away, in shared memory (like
// pg_stat_statements): they count rejected writes although the rejecting
// transaction rolls back, survive until the server restarts, and exist only
// when the library is in shared_preload_libraries. Without it every Count*()
// is a no-op and the views say how to enable the counters.
//
// Entries, keyed by (database, kind, table OID, hash of the names):
//   * a protected table (its home relation): writes judged by its guard;
//   * a resource namespace: the writes of its resource-scope tables, and its
//     leases' tokens (highest HWM seen);
//   * a lease resource (namespace, resource): acquisitions, contention and
//     waits, renewals, releases and hold times, expiries found late.
// A fixed-size hash (fencing.stats_max entries): inserts take the LWLock
// exclusively, counting holds it shared (increments are atomics on the entry,
// the last rejection is written under the entry's spinlock). When the hash is
// full, an insert evicts the least recently used entries (5%, at least 10),
// as pg_stat_statements does, and counts them (fencing_stats_info.evicted).
// A backend may cache a pointer to an entry (the guard caches its table's
// entry per trigger: a counted write costs a comparison, the shared lock and
// one atomic add) while no eviction happened since its lookup.
//
// Counting happens before the ereport that rejects the write.
#pragma once

#include "core/token.hpp"
#include "pg/base/pg.hpp"

namespace fencing::pg {

// _PG_init: defines fencing.track_stats, fencing.stats_max and
// fencing.log_rejections, and, when loaded from shared_preload_libraries,
// installs the shared memory hooks.
void DefineStatsSettings();

// Guard side. trigger_oid identifies the firing trigger (for the cache);
// name_space is the resource namespace (resource scope) or nullptr.
struct WriteStatsTarget {
    Oid trigger_oid;
    Oid home_relid;
    const char *name_space;
};
enum class WriteOutcome { kAccepted, kUnfenced, kMissingToken };
void CountWrite(const WriteStatsTarget &target, WriteOutcome outcome, Token token);
// A stale write, skipped or about to be rejected: counts it, records it as
// the last rejection, and writes the LOG line (fencing.log_rejections). key is
// the description the error DETAIL shows the writer (already filtered by the
// writer's privileges).
void CountStale(const WriteStatsTarget &target, bool skipped, const char *key, Token offered,
                Token hwm);
// A write the guard admitted that the AFTER INSERT recheck then refuses: it is
// no longer counted as admitted (CountStale or CountWrite counts the refusal).
void UncountWrite(const WriteStatsTarget &target, WriteOutcome outcome);

// fencing_allow_unfenced() was called: one LOG line with the table, the
// reason, the role and the backend (always written: the choice is audited).
void LogUnfencedAllowed(Oid relid, const char *reason);

// Whether counters are kept (preloaded and fencing.track_stats on).
bool StatsEnabled();

// Lease side (pg/api/leases.cpp). Counted when the call returns, whether or not
// its transaction commits.
enum class LeaseEvent { kRenewed, kReleased, kExpiryDetected };
void CountAcquire(const char *name_space, const char *resource, bool acquired, bool contended,
                  int64 waited_us, Token token);
// hold_us: how long the released lease was held (kReleased only).
void CountLeaseEvent(const char *name_space, const char *resource, LeaseEvent event, int64 hold_us);

}  // namespace fencing::pg
