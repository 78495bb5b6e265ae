// Shared-memory counters and the rejection log line: see pg/base/stats.hpp.
#include "pg/base/stats.hpp"
#include "pg/base/compat.hpp"

#include "pg/base/boundary.hpp"
#include "pg/base/relation_args.hpp"

extern "C" {
#include "common/hashfn.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

namespace fencing::pg {
namespace {

bool track_stats = true;
bool log_rejections = true;
int stats_max = 5000;

// Names longer than these are kept truncated (the entry is still keyed by a
// hash of the full names).
constexpr int kNamespaceCapacity = 64;
constexpr int kResourceCapacity = 128;
constexpr int kKeyCapacity = 256;
// A value of the log line is cut after this many bytes (then ends in "..."):
// a resource value may be as long as a text can be, and its escaped copy
// would overflow a string buffer, turning the LOG line into an error.
constexpr int kLogValueCapacity = 1024;

enum Kind : uint32 { kTableEntry = 1, kNamespaceEntry = 2, kLeaseEntry = 3 };

// Counter slots. Tables and namespaces:
enum WriteCounter { kAccepted, kUnfenced, kRejected, kSkipped, kMissing, kWriteCounters };
// Leases:
enum LeaseCounter {
    kAcquisitions,
    kContended,
    kWaitTotalUs,
    kWaitMaxUs,
    kRenewals,
    kReleases,
    kHoldTotalUs,
    kHoldMaxUs,
    kExpiries,
    kLeaseCounters
};
constexpr int kCounters = kLeaseCounters;

struct StatsKey {
    Oid dbid;
    uint32 kind;
    Oid relid;  // tables; InvalidOid otherwise
    uint32 padding;
    uint64 name_hash;  // namespace (and resource); 0 for tables
};

struct StatsEntry {
    StatsKey key;  // first: the hash key
    char name_space[kNamespaceCapacity];
    char resource[kResourceCapacity];
    bool names_truncated;
    pg_atomic_uint64 counters[kCounters];
    // Highest HWM seen (tables, namespaces) or last token issued (leases),
    // plus one; 0 for none.
    pg_atomic_uint64 top_plus_one;
    // The LRU clock when the entry was last counted in (see Touch).
    pg_atomic_uint64 last_used;
    slock_t mutex;  // the last rejection
    bool has_rejection;
    TimestampTz rejected_at;
    int64 rejected_offered;
    int64 rejected_hwm;
    Oid rejected_relid;
    char rejected_key[kKeyCapacity];
};

// An entry is used only under the lock (shared): eviction, under the lock
// exclusively, may give its slot to another key.
struct StatsShared {
    LWLock *lock;  // shared: lookups, counting, reads; exclusive: inserts, evictions, resets
    pg_atomic_uint64 untracked;  // events not counted because no entry could be made
    pg_atomic_uint64 evicted;    // entries evicted to make room
    // The LRU clock: advances at each insertion, so an entry's last_used says
    // how many keys came in since it was last counted in.
    pg_atomic_uint64 clock;
    uint64 generation;     // under lock: one more at each eviction (cached entries are stale)
    TimestampTz reset_at;  // under lock
};

StatsShared *shared = nullptr;
HTAB *entries = nullptr;

shmem_request_hook_type previous_request_hook = nullptr;
shmem_startup_hook_type previous_startup_hook = nullptr;

Size SharedSize() {
    return add_size(MAXALIGN(sizeof(StatsShared)),
                    hash_estimate_size(stats_max, sizeof(StatsEntry)));
}

void RequestSharedMemory() {
    if (previous_request_hook != nullptr)
        previous_request_hook();
    RequestAddinShmemSpace(SharedSize());
    RequestNamedLWLockTranche("fencing_stats", 1);
}

void StartSharedMemory() {
    if (previous_startup_hook != nullptr)
        previous_startup_hook();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    bool found;
    shared =
        static_cast<StatsShared *>(ShmemInitStruct("fencing stats", sizeof(StatsShared), &found));
    if (!found) {
        shared->lock = &(GetNamedLWLockTranche("fencing_stats"))->lock;
        pg_atomic_init_u64(&shared->untracked, 0);
        pg_atomic_init_u64(&shared->evicted, 0);
        pg_atomic_init_u64(&shared->clock, 0);
        shared->generation = 0;
        shared->reset_at = GetCurrentTimestamp();
    }
    HASHCTL info;
    info.keysize = sizeof(StatsKey);
    info.entrysize = sizeof(StatsEntry);
    entries = InitSharedHash("fencing stats entries", stats_max, &info,
                             HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
    LWLockRelease(AddinShmemInitLock);
}

bool Counting() {
    return shared != nullptr && track_stats;
}

void CopyTruncated(char *out, int capacity, const char *text, bool *truncated) {
    size_t len = text != nullptr ? strlen(text) : 0;
    if (len >= static_cast<size_t>(capacity)) {
        len = pg_mbcliplen(text, static_cast<int>(len), capacity - 1);
        *truncated = true;
    }
    if (len > 0)
        memcpy(out, text, len);
    out[len] = '\0';
}

void ZeroEntry(StatsEntry *e) {
    for (int i = 0; i < kCounters; ++i) pg_atomic_write_u64(&e->counters[i], 0);
    pg_atomic_write_u64(&e->top_plus_one, 0);
    SpinLockAcquire(&e->mutex);
    e->has_rejection = false;
    SpinLockRelease(&e->mutex);
}

// The hash of an entry's full names (0 for none): the entry's identity, as
// its names may be kept truncated. fencing.stats_name_hash() gives it to the
// views, which match entries to the catalog's full names by it.
uint64 NameHash(const char *name_space, const char *resource) {
    if (name_space == nullptr)
        return 0;
    StringInfoData names;
    initStringInfo(&names);
    appendBinaryStringInfo(&names, name_space, static_cast<int>(strlen(name_space)) + 1);
    if (resource != nullptr)
        appendStringInfoString(&names, resource);
    uint64 hash = DatumGetUInt64(
        hash_any_extended(reinterpret_cast<const unsigned char *>(names.data), names.len, 0));
    pfree(names.data);
    return hash;
}

// Counted in now: one read of the shared clock, and a write only when the
// clock moved since (so a busy entry's cache line is not written for it on
// every event).
void Touch(StatsEntry *e) {
    uint64 now = pg_atomic_read_u64(&shared->clock);
    if (pg_atomic_read_u64(&e->last_used) != now)
        pg_atomic_write_u64(&e->last_used, now);
}

int CompareLastUsed(const void *a, const void *b) {
    uint64 x = pg_atomic_read_u64(&(*static_cast<StatsEntry *const *>(a))->last_used);
    uint64 y = pg_atomic_read_u64(&(*static_cast<StatsEntry *const *>(b))->last_used);
    return x < y ? -1 : x > y ? 1 : 0;
}

// Evicts the least recently used entries (5%, at least 10), as
// pg_stat_statements does, and counts them. The lock is held exclusively.
void EvictLeastRecentlyUsed() {
    long n = hash_get_num_entries(entries);
    StatsEntry **all = static_cast<StatsEntry **>(palloc(sizeof(StatsEntry *) * Max(n, 1L)));
    HASH_SEQ_STATUS seq;
    hash_seq_init(&seq, entries);
    long i = 0;
    StatsEntry *e;
    while ((e = static_cast<StatsEntry *>(hash_seq_search(&seq))) != nullptr) all[i++] = e;
    qsort(all, i, sizeof(StatsEntry *), CompareLastUsed);
    long victims = Min(i, Max(10L, i / 20));
    for (long v = 0; v < victims; ++v) hash_search(entries, &all[v]->key, HASH_REMOVE, nullptr);
    pfree(all);
    pg_atomic_fetch_add_u64(&shared->evicted, static_cast<uint64>(victims));
    shared->generation++;
}

void InitEntry(StatsEntry *entry, const char *name_space, const char *resource) {
    entry->names_truncated = false;
    CopyTruncated(entry->name_space, kNamespaceCapacity, name_space, &entry->names_truncated);
    CopyTruncated(entry->resource, kResourceCapacity, resource, &entry->names_truncated);
    for (int i = 0; i < kCounters; ++i) pg_atomic_init_u64(&entry->counters[i], 0);
    pg_atomic_init_u64(&entry->top_plus_one, 0);
    pg_atomic_init_u64(&entry->last_used, pg_atomic_add_fetch_u64(&shared->clock, 1));
    SpinLockInit(&entry->mutex);
    entry->has_rejection = false;
}

// Creates the entry of a key (the lock is held exclusively), evicting the
// least recently used entries when the table is full.
void InsertEntry(const StatsKey &key, const char *name_space, const char *resource) {
    bool found;
    auto *entry = static_cast<StatsEntry *>(hash_search(entries, &key, HASH_ENTER_NULL, &found));
    if (entry == nullptr) {
        EvictLeastRecentlyUsed();
        entry = static_cast<StatsEntry *>(hash_search(entries, &key, HASH_ENTER_NULL, &found));
    }
    if (entry != nullptr && !found)
        InitEntry(entry, name_space, resource);
}

// The entry for a key, created if missing, with the lock held shared by the
// caller (and still held on return; it is released and taken again around an
// insertion). nullptr only when no entry could be made (the event is then
// counted as untracked).
StatsEntry *EntryFor(Kind kind, Oid relid, const char *name_space, const char *resource) {
    StatsKey key;
    memset(&key, 0, sizeof(key));
    key.dbid = MyDatabaseId;
    key.kind = kind;
    key.relid = relid;
    key.name_hash = NameHash(name_space, resource);
    auto *entry = static_cast<StatsEntry *>(hash_search(entries, &key, HASH_FIND, nullptr));
    if (entry == nullptr) {
        LWLockRelease(shared->lock);
        LWLockAcquire(shared->lock, LW_EXCLUSIVE);
        InsertEntry(key, name_space, resource);
        LWLockRelease(shared->lock);
        LWLockAcquire(shared->lock, LW_SHARED);
        // Another backend may have evicted it in between: then this event
        // goes uncounted (and says so), the next one makes the entry again.
        entry = static_cast<StatsEntry *>(hash_search(entries, &key, HASH_FIND, nullptr));
    }
    if (entry == nullptr)
        pg_atomic_fetch_add_u64(&shared->untracked, 1);
    else
        Touch(entry);
    return entry;
}

void Add(StatsEntry *e, int counter, uint64 n) {
    if (e != nullptr)
        pg_atomic_fetch_add_u64(&e->counters[counter], n);
}

void RaiseMax(pg_atomic_uint64 *p, uint64 value) {
    uint64 current = pg_atomic_read_u64(p);
    while (value > current && !pg_atomic_compare_exchange_u64(p, &current, value)) {
    }
}

uint64 PlusOne(Token t) {
    return static_cast<uint64>(t) + 1;
}

// The guard's entries, cached per trigger: rows of a statement (and
// statements on one table) hit it.
struct WriteSlot {
    Oid trigger_oid = InvalidOid;
    Oid home_relid = InvalidOid;
    uint64 generation = 0;  // shared->generation when the entries were looked up
    StatsEntry *table = nullptr;
    StatsEntry *name_space = nullptr;
};
WriteSlot write_slot;

// With the lock held shared (EntryFor). The cached entries are valid while
// no eviction happened since they were looked up.
const WriteSlot &SlotFor(const WriteStatsTarget &t) {
    if (t.trigger_oid == write_slot.trigger_oid && t.home_relid == write_slot.home_relid &&
        write_slot.generation == shared->generation) {
        if (write_slot.table != nullptr)
            Touch(write_slot.table);
        if (write_slot.name_space != nullptr)
            Touch(write_slot.name_space);
        return write_slot;
    }
    write_slot.trigger_oid = InvalidOid;
    // Looking up the second entry may evict the first: look both up again
    // then (a few times; after that the event goes untracked).
    for (int attempt = 0; attempt < 3; ++attempt) {
        uint64 generation = shared->generation;
        write_slot.table = EntryFor(kTableEntry, t.home_relid, nullptr, nullptr);
        write_slot.name_space = t.name_space != nullptr
                                    ? EntryFor(kNamespaceEntry, InvalidOid, t.name_space, nullptr)
                                    : nullptr;
        if (shared->generation == generation) {
            write_slot.generation = generation;
            write_slot.home_relid = t.home_relid;
            if (write_slot.table != nullptr)
                write_slot.trigger_oid = t.trigger_oid;
            return write_slot;
        }
    }
    write_slot.table = write_slot.name_space = nullptr;
    pg_atomic_fetch_add_u64(&shared->untracked, 1);
    return write_slot;
}

void RecordRejection(StatsEntry *e, Oid relid, const char *key, Token offered, Token hwm,
                     TimestampTz now) {
    if (e == nullptr)
        return;
    char copy[kKeyCapacity];
    bool truncated = false;
    CopyTruncated(copy, kKeyCapacity, key, &truncated);
    SpinLockAcquire(&e->mutex);
    e->has_rejection = true;
    e->rejected_at = now;
    e->rejected_offered = offered;
    e->rejected_hwm = hwm;
    e->rejected_relid = relid;
    memcpy(e->rejected_key, copy, sizeof(copy));
    SpinLockRelease(&e->mutex);
}

// A value of the log line: double-quoted, with \" \\ and control characters
// escaped, so the line stays one line and parses with one pattern. Line breaks
// outside ASCII count too (a reader splitting lines as Unicode does, Python's
// str.splitlines() say, would otherwise cut a writer's own line in two, out of
// the pattern's reach): in UTF-8 the C1 controls (U+0080-U+009F, NEL among
// them) and U+2028/U+2029 are written \uNNNN; in SQL_ASCII, where bytes carry
// no encoding, every byte above 0x7F is written \xNN.
void AppendQuoted(StringInfo buf, const char *value) {
    int encoding = GetDatabaseEncoding();
    if (value == nullptr)
        value = "";
    int len = static_cast<int>(strnlen(value, kLogValueCapacity + 1));
    bool cut = len > kLogValueCapacity;
    if (cut)
        len = pg_mbcliplen(value, len, kLogValueCapacity);
    appendStringInfoChar(buf, '"');
    for (const char *p = value; p < value + len; ++p) {
        unsigned char c = static_cast<unsigned char>(*p);
        unsigned char next = static_cast<unsigned char>(p[1]);
        if (c == '"' || c == '\\')
            appendStringInfo(buf, "\\%c", c);
        else if (c == '\n')
            appendStringInfoString(buf, "\\n");
        else if (c < 0x20 || c == 0x7f || (c >= 0x80 && encoding == PG_SQL_ASCII))
            appendStringInfo(buf, "\\x%02x", c);
        else if (encoding == PG_UTF8 && c == 0xc2 && next >= 0x80 && next <= 0x9f) {
            appendStringInfo(buf, "\\u%04x", next);
            ++p;
        } else if (encoding == PG_UTF8 && c == 0xe2 && next == 0x80 &&
                   (static_cast<unsigned char>(p[2]) == 0xa8 ||
                    static_cast<unsigned char>(p[2]) == 0xa9)) {
            appendStringInfo(buf, "\\u%04x", 0x2000 + (static_cast<unsigned char>(p[2]) - 0x80));
            p += 2;
        } else
            appendStringInfoChar(buf, static_cast<char>(c));
    }
    if (cut)
        appendStringInfoString(buf, "...");
    appendStringInfoChar(buf, '"');
}

// Ends a log line with who wrote it and writes it to the server log.
void EmitLogLine(StringInfo line) {
    appendStringInfoString(line, " application_name=");
    AppendQuoted(line, application_name);
    appendStringInfoString(line, " user=");
    AppendQuoted(line, GetUserNameFromId(GetUserId(), true));
    appendStringInfo(line, " pid=%d", MyProcPid);
    // For the server log only: sent to a client (client_min_messages = log)
    // it could fail to convert to the client's encoding and turn a skipped
    // write into an error.
    ereport(LOG_SERVER_ONLY,
            (errmsg_internal("%s", line->data), errhidestmt(true), errhidecontext(true)));
    pfree(line->data);
}

void LogStale(const WriteStatsTarget &t, bool skipped, const char *key, Token offered, Token hwm) {
    StringInfoData line;
    initStringInfo(&line);
    appendStringInfo(&line, "fencing: stale write %s: table=", skipped ? "skipped" : "rejected");
    AppendQuoted(&line, RelName(t.home_relid));
    appendStringInfoString(&line, " namespace=");
    AppendQuoted(&line, t.name_space);
    appendStringInfoString(&line, " key=");
    AppendQuoted(&line, key);
    appendStringInfo(&line, " offered=" INT64_FORMAT " hwm=" INT64_FORMAT, offered, hwm);
    EmitLogLine(&line);
}

void CountLeaseEventIn(StatsEntry *e, LeaseEvent event, int64 hold_us) {
    switch (event) {
        case LeaseEvent::kRenewed:
            Add(e, kRenewals, 1);
            break;
        case LeaseEvent::kReleased: {
            uint64 held = static_cast<uint64>(Max(hold_us, int64{0}));
            Add(e, kReleases, 1);
            Add(e, kHoldTotalUs, held);
            RaiseMax(&e->counters[kHoldMaxUs], held);
            break;
        }
        case LeaseEvent::kExpiryDetected:
            Add(e, kExpiries, 1);
            break;
    }
}

}  // namespace

void DefineStatsSettings() {
    DefineCustomBoolVariable(
        "fencing.track_stats", "Counts fenced writes and leases in shared memory.",
        "Needs fencing in shared_preload_libraries; see the fencing_stats view.", &track_stats,
        true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("fencing.log_rejections",
                             "Writes one LOG line per stale write turned away.", nullptr,
                             &log_rejections, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    // Shared memory is sized at server start: only a preloaded library can
    // define (and use) the size.
    if (!process_shared_preload_libraries_in_progress)
        return;
    DefineCustomIntVariable(
        "fencing.stats_max", "Maximum number of tables, namespaces and lease resources counted.",
        nullptr, &stats_max, 5000, 100, 1000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    previous_request_hook = shmem_request_hook;
    shmem_request_hook = RequestSharedMemory;
    previous_startup_hook = shmem_startup_hook;
    shmem_startup_hook = StartSharedMemory;
}

void LogUnfencedAllowed(Oid relid, const char *reason) {
    StringInfoData line;
    initStringInfo(&line);
    appendStringInfoString(&line, "fencing: unfenced writes allowed: table=");
    AppendQuoted(&line, RelName(relid));
    appendStringInfoString(&line, " reason=");
    AppendQuoted(&line, reason);
    EmitLogLine(&line);
}

bool StatsEnabled() {
    return Counting();
}

void CountWrite(const WriteStatsTarget &target, WriteOutcome outcome, Token token) {
    if (!Counting())
        return;
    LWLockAcquire(shared->lock, LW_SHARED);
    const WriteSlot &slot = SlotFor(target);
    int counter = outcome == WriteOutcome::kAccepted   ? kAccepted
                  : outcome == WriteOutcome::kUnfenced ? kUnfenced
                                                       : kMissing;
    if (slot.table != nullptr) {
        pg_atomic_fetch_add_u64(&slot.table->counters[counter], 1);
        if (outcome == WriteOutcome::kAccepted)
            RaiseMax(&slot.table->top_plus_one, PlusOne(token));
    }
    if (slot.name_space != nullptr) {
        pg_atomic_fetch_add_u64(&slot.name_space->counters[counter], 1);
        if (outcome == WriteOutcome::kAccepted)
            RaiseMax(&slot.name_space->top_plus_one, PlusOne(token));
    }
    LWLockRelease(shared->lock);
}

void CountStale(const WriteStatsTarget &target, bool skipped, const char *key, Token offered,
                Token hwm) {
    if (Counting()) {
        LWLockAcquire(shared->lock, LW_SHARED);
        const WriteSlot &slot = SlotFor(target);
        TimestampTz now = GetCurrentTimestamp();
        StatsEntry *both[] = {slot.table, slot.name_space};
        for (StatsEntry *e : both) {
            if (e == nullptr)
                continue;
            Add(e, skipped ? kSkipped : kRejected, 1);
            RaiseMax(&e->top_plus_one, PlusOne(hwm));
            RecordRejection(e, target.home_relid, key, offered, hwm, now);
        }
        LWLockRelease(shared->lock);
    }
    if (log_rejections)
        LogStale(target, skipped, key, offered, hwm);
}

void UncountWrite(const WriteStatsTarget &target, WriteOutcome outcome) {
    if (!Counting())
        return;
    int counter = outcome == WriteOutcome::kAccepted ? kAccepted : kUnfenced;
    LWLockAcquire(shared->lock, LW_SHARED);
    const WriteSlot &slot = SlotFor(target);
    StatsEntry *both[] = {slot.table, slot.name_space};
    for (StatsEntry *e : both) {
        if (e == nullptr)
            continue;
        uint64 current = pg_atomic_read_u64(&e->counters[counter]);
        while (current > 0 &&
               !pg_atomic_compare_exchange_u64(&e->counters[counter], &current, current - 1)) {
        }
    }
    LWLockRelease(shared->lock);
}

void CountAcquire(const char *name_space, const char *resource, bool acquired, bool contended,
                  int64 waited_us, Token token) {
    if (!Counting())
        return;
    LWLockAcquire(shared->lock, LW_SHARED);
    // One entry at a time: looking up the next may evict the previous.
    StatsEntry *e = EntryFor(kLeaseEntry, InvalidOid, name_space, resource);
    if (e != nullptr) {
        if (acquired) {
            Add(e, kAcquisitions, 1);
            RaiseMax(&e->top_plus_one, PlusOne(token));
        }
        if (contended) {
            uint64 waited = static_cast<uint64>(Max(waited_us, int64{0}));
            Add(e, kContended, 1);
            Add(e, kWaitTotalUs, waited);
            RaiseMax(&e->counters[kWaitMaxUs], waited);
        }
    }
    if (acquired) {
        // A grant raises the resource's HWM to its token.
        StatsEntry *ns = EntryFor(kNamespaceEntry, InvalidOid, name_space, nullptr);
        if (ns != nullptr)
            RaiseMax(&ns->top_plus_one, PlusOne(token));
    }
    LWLockRelease(shared->lock);
}

void CountLeaseEvent(const char *name_space, const char *resource, LeaseEvent event,
                     int64 hold_us) {
    if (!Counting())
        return;
    LWLockAcquire(shared->lock, LW_SHARED);
    StatsEntry *e = EntryFor(kLeaseEntry, InvalidOid, name_space, resource);
    if (e != nullptr)
        CountLeaseEventIn(e, event, hold_us);
    LWLockRelease(shared->lock);
}

namespace {

constexpr int kMaxColumns = 16;

// One row of fencing.write_stats() for a table or namespace entry.
void WriteRow(StatsEntry *e, Datum *values, bool *nulls) {
    values[0] = CStringGetTextDatum(e->key.kind == kTableEntry ? "table" : "namespace");
    values[1] = ObjectIdGetDatum(e->key.relid);
    nulls[1] = e->key.kind != kTableEntry;
    values[2] = CStringGetTextDatum(e->name_space);
    nulls[2] = e->key.kind != kNamespaceEntry;
    for (int i = 0; i < kWriteCounters; ++i)
        values[3 + i] = Int64GetDatum(static_cast<int64>(pg_atomic_read_u64(&e->counters[i])));
    uint64 top = pg_atomic_read_u64(&e->top_plus_one);
    values[8] = Int64GetDatum(static_cast<int64>(top - 1));
    nulls[8] = top == 0;
    SpinLockAcquire(&e->mutex);
    bool has = e->has_rejection;
    TimestampTz at = e->rejected_at;
    int64 offered = e->rejected_offered, hwm = e->rejected_hwm;
    Oid relid = e->rejected_relid;
    char key[kKeyCapacity];
    memcpy(key, e->rejected_key, sizeof(key));
    SpinLockRelease(&e->mutex);
    values[9] = TimestampTzGetDatum(at);
    values[10] = Int64GetDatum(offered);
    values[11] = Int64GetDatum(hwm);
    values[12] = ObjectIdGetDatum(relid);
    values[13] = CStringGetTextDatum(key);
    for (int i = 9; i <= 13; ++i) nulls[i] = !has;
    values[14] = BoolGetDatum(e->names_truncated);
    values[15] = Int64GetDatum(static_cast<int64>(e->key.name_hash));
    nulls[15] = e->key.kind != kNamespaceEntry;
}

// One row of fencing.lease_stats() for a lease entry.
void LeaseRow(StatsEntry *e, Datum *values, bool *nulls) {
    values[0] = CStringGetTextDatum(e->name_space);
    values[1] = CStringGetTextDatum(e->resource);
    for (int i = 0; i < kLeaseCounters; ++i)
        values[2 + i] = Int64GetDatum(static_cast<int64>(pg_atomic_read_u64(&e->counters[i])));
    uint64 top = pg_atomic_read_u64(&e->top_plus_one);
    values[11] = Int64GetDatum(static_cast<int64>(top - 1));
    nulls[11] = top == 0;
    values[12] = BoolGetDatum(e->names_truncated);
    values[13] = Int64GetDatum(static_cast<int64>(e->key.name_hash));
}

// The entries of this database, raw (the views filter rows and keys by
// privilege): leases, or tables and namespaces.
Datum ScanEntries(FunctionCallInfo fcinfo, bool leases) {
    InitMaterializedSRF(fcinfo, 0);
    auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    if (shared == nullptr)
        return static_cast<Datum>(0);
    LWLockAcquire(shared->lock, LW_SHARED);
    HASH_SEQ_STATUS seq;
    hash_seq_init(&seq, entries);
    StatsEntry *e;
    while ((e = static_cast<StatsEntry *>(hash_seq_search(&seq))) != nullptr) {
        if (e->key.dbid != MyDatabaseId || (e->key.kind == kLeaseEntry) != leases)
            continue;
        Datum values[kMaxColumns];
        bool nulls[kMaxColumns] = {};
        if (leases)
            LeaseRow(e, values, nulls);
        else
            WriteRow(e, values, nulls);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    LWLockRelease(shared->lock);
    return static_cast<Datum>(0);
}

// fencing.stats_info(): whether counting is on, how full the table is.
Datum StatsInfo(FunctionCallInfo fcinfo) {
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("fencing.stats_info() must return a row")));
    desc = BlessTupleDesc(desc);
    Datum values[6];
    bool nulls[6] = {};
    values[0] = BoolGetDatum(shared != nullptr);
    values[1] = BoolGetDatum(track_stats);
    values[2] = Int32GetDatum(stats_max);
    nulls[2] = shared == nullptr;
    if (shared != nullptr) {
        LWLockAcquire(shared->lock, LW_SHARED);
        values[3] = Int64GetDatum(static_cast<int64>(hash_get_num_entries(entries)));
        values[5] = TimestampTzGetDatum(shared->reset_at);
        LWLockRelease(shared->lock);
        values[4] = Int64GetDatum(static_cast<int64>(pg_atomic_read_u64(&shared->untracked)));
    } else {
        nulls[3] = nulls[4] = nulls[5] = true;
    }
    return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

// fencing.stats_evicted(): how many entries were evicted to make room since
// the server started or the counters were reset; NULL without preloading.
Datum StatsEvicted(FunctionCallInfo fcinfo) {
    if (shared == nullptr)
        PG_RETURN_NULL();
    PG_RETURN_INT64(static_cast<int64>(pg_atomic_read_u64(&shared->evicted)));
}

// fencing_stats_reset(): zeroes every counter of every database (EXECUTE is
// revoked from PUBLIC).
Datum StatsReset(FunctionCallInfo) {
    if (shared == nullptr) {
        ereport(NOTICE,
                (errmsg("fencing counters are not enabled: nothing to reset"),
                 errhint("Add fencing to shared_preload_libraries and restart the server.")));
        PG_RETURN_VOID();
    }
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    HASH_SEQ_STATUS seq;
    hash_seq_init(&seq, entries);
    StatsEntry *e;
    while ((e = static_cast<StatsEntry *>(hash_seq_search(&seq))) != nullptr) ZeroEntry(e);
    pg_atomic_write_u64(&shared->untracked, 0);
    pg_atomic_write_u64(&shared->evicted, 0);
    shared->reset_at = GetCurrentTimestamp();
    LWLockRelease(shared->lock);
    PG_RETURN_VOID();
}

// fencing.stats_name_hash(namespace, resource): the hash an entry of these
// names is keyed by (resource NULL: the namespace's own entry).
Datum StatsNameHash(FunctionCallInfo fcinfo) {
    if (PG_ARGISNULL(0))
        PG_RETURN_NULL();
    const char *name_space = text_to_cstring(PG_GETARG_TEXT_PP(0));
    const char *resource = PG_ARGISNULL(1) ? nullptr : text_to_cstring(PG_GETARG_TEXT_PP(1));
    PG_RETURN_INT64(static_cast<int64>(NameHash(name_space, resource)));
}

}  // namespace
}  // namespace fencing::pg

FENCING_FUNCTION(fencing_stats_name_hash) {
    return fencing::pg::StatsNameHash(fcinfo);
}
FENCING_FUNCTION(fencing_write_stats) {
    return fencing::pg::ScanEntries(fcinfo, false);
}
FENCING_FUNCTION(fencing_lease_stats) {
    return fencing::pg::ScanEntries(fcinfo, true);
}
FENCING_FUNCTION(fencing_stats_info) {
    return fencing::pg::StatsInfo(fcinfo);
}
FENCING_FUNCTION(fencing_stats_evicted) {
    return fencing::pg::StatsEvicted(fcinfo);
}
FENCING_FUNCTION(fencing_stats_reset) {
    return fencing::pg::StatsReset(fcinfo);
}
