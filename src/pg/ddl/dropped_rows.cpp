// The rows' tokens of a fenced table dropped for a recreate, kept for the
// transaction and checked against the table that takes its name (see
// dropped_rows.hpp). Kept in backend memory, not in a table: the DROP and the
// adoption run in one transaction of one backend, and writing a row per row
// would make every DROP of a large fenced table as slow as a DELETE of it.
#include "pg/ddl/dropped_rows.hpp"

#include <algorithm>
#include <initializer_list>

#include "core/policy.hpp"
#include "pg/base/boundary.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/catalog/citus_node.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/ddl/copy_snapshot.hpp"
#include "pg/hwm/store.hpp"
#include "pg/hwm/tombstones.hpp"
#include "pg/base/compat.hpp"
#include "pg/keys/row_key.hpp"

extern "C" {
#include "access/table.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "utils/snapmgr.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

namespace fencing::pg {
namespace {

struct RowToken {
    uint64 key_hash;  // 0: compared as a multiset of tokens, not by key
    Token token;
    Datum key;  // the canonical key, when kept (keep_keys)
};

struct RowTokens {
    MemoryContext context;
    bool keep_keys;
    RowToken *items;
    int64 count;
    int64 capacity;
    Size bytes;     // items and kept keys so far
    Size limit;     // past it, nothing more is kept: overflow
    bool overflow;  // the adoption is then refused, never judged on a part
};

// One dropped table's rows, in TopTransactionContext.
struct KeptRows {
    KeptRows *next;
    char *name;         // schema-qualified, quoted as format('%I.%I') does
    char *key_columns;  // the primary key's columns, comma-separated; NULL: none
    int nest_level;     // the subtransaction whose abort takes it back
    RowTokens rows;
};

KeptRows *kept = nullptr;

// A dropped table whose copy may lack a write, in TopTransactionContext.
struct UnseenWrite {
    UnseenWrite *next;
    char *name;  // as KeptRows's
    char *why;
    int nest_level;
};

UnseenWrite *unseen = nullptr;

void Append(void *arg, Datum key, uint64 key_hash, Token token) {
    auto *rows = static_cast<RowTokens *>(arg);
    bool with_key = rows->keep_keys && key_hash != 0;
    Size bytes = sizeof(RowToken) + (with_key ? VARSIZE_ANY(DatumGetPointer(key)) : 0);
    if (rows->overflow || rows->bytes + bytes > rows->limit) {
        rows->overflow = true;
        return;
    }
    rows->bytes += bytes;
    if (rows->count == rows->capacity) {
        rows->capacity = rows->capacity == 0 ? 1024 : rows->capacity * 2;
        Size array_size = sizeof(RowToken) * rows->capacity;
        rows->items = static_cast<RowToken *>(
            rows->items == nullptr ? MemoryContextAllocHuge(rows->context, array_size)
                                   : repalloc_huge(rows->items, array_size));
    }
    Datum kept_key = Datum(0);
    if (with_key) {
        MemoryContext caller = MemoryContextSwitchTo(rows->context);
        kept_key = datumCopy(key, false, -1);
        MemoryContextSwitchTo(caller);
    }
    rows->items[rows->count++] = RowToken{key_hash, token, kept_key};
}

void OnXactEvent(XactEvent, void *) {
    kept = nullptr;  // its memory goes with TopTransactionContext
    unseen = nullptr;
}

void OnSubXactEvent(SubXactEvent event, SubTransactionId, SubTransactionId, void *) {
    int level = GetCurrentTransactionNestLevel();
    if (event == SUBXACT_EVENT_COMMIT_SUB) {
        for (KeptRows *k = kept; k != nullptr; k = k->next)
            if (k->nest_level >= level)
                k->nest_level = level - 1;
        for (UnseenWrite *u = unseen; u != nullptr; u = u->next)
            if (u->nest_level >= level)
                u->nest_level = level - 1;
    } else if (event == SUBXACT_EVENT_ABORT_SUB) {
        while (kept != nullptr && kept->nest_level >= level) kept = kept->next;
        while (unseen != nullptr && unseen->nest_level >= level) unseen = unseen->next;
    }
}

void RegisterCallbacksOnce() {
    static bool registered = false;
    if (registered)
        return;
    RegisterXactCallback(OnXactEvent, nullptr);
    RegisterSubXactCallback(OnSubXactEvent, nullptr);
    registered = true;
}

// "id,tenant": the primary key's column names, in key order; NULL without one.
char *KeyColumns(Relation rel) {
    PrimaryKey pk;
    if (!GetPrimaryKey(rel, &pk))
        return nullptr;
    StringInfoData names;
    initStringInfo(&names);
    for (int i = 0; i < pk.natts; ++i)
        appendStringInfo(&names, "%s%s", i > 0 ? "," : "",
                         NameStr(TupleDescAttr(RelationGetDescr(rel), pk.attnums[i] - 1)->attname));
    return names.data;
}

bool SameKey(const char *a, const char *b) {
    return a != nullptr && b != nullptr && strcmp(a, b) == 0;
}

// Calls visit(rel, token_attnum) for each plain table of leaves (locked by
// the caller) that has token_column.
template <typename Visit>
void ForEachTokenLeaf(const List *leaves, const char *token_column, Visit visit) {
    ListCell *lc;
    foreach (lc, leaves) {
        Oid leaf = lfirst_oid(lc);
        AttrNumber token_attnum = get_attnum(leaf, token_column);
        if (get_rel_relkind(leaf) != RELKIND_RELATION || token_attnum == InvalidAttrNumber)
            continue;
        Relation rel = table_open(leaf, NoLock);
        visit(rel, token_attnum);
        table_close(rel, NoLock);
    }
}

// The (key, token) of every row of leaves, keyed when each leaf's primary
// key has key_columns.
void CollectRows(const List *leaves, const char *token_column, const char *key_columns,
                 RowTokens *rows) {
    ForEachTokenLeaf(leaves, token_column, [&](Relation rel, AttrNumber token_attnum) {
        ForEachRowToken(rel, token_attnum, SameKey(KeyColumns(rel), key_columns), Append, rows);
    });
}

char *QualifiedName(Oid relid) {
    return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
                                      get_rel_name(relid));
}

// By key, then highest token first.
bool KeyThenTokenDown(const RowToken &a, const RowToken &b) {
    return a.key_hash != b.key_hash ? a.key_hash < b.key_hash : a.token > b.token;
}

[[noreturn]] void RefuseMissedWrite(const char *name, Token dropped, bool has_new, Token now,
                                    bool by_key) {
    char held[32];
    snprintf(held, sizeof held, "%lld", static_cast<long long>(now));
    ereport(ERROR,
            (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
             errmsg("table %s cannot take the fencing state of the dropped table of that name: "
                    "it lacks a write the dropped table held",
                    name),
             errdetail(by_key ? "A row of the dropped table held token %lld at its DROP; the new "
                                "table holds %s for that key."
                              : "The dropped table held a row at token %lld at its DROP; the new "
                                "table's rows, matched from the highest token down, hold %s there.",
                       static_cast<long long>(dropped), has_new ? held : "no row"),
             errhint("A write committed after the copy and before the DROP would be lost, and a "
                     "stale token accepted. Retry the migration with every writer kept out from "
                     "the copy to the DROP (LOCK TABLE %s IN SHARE MODE before copying), or copy "
                     "every row with its token.",
                     name)));
}

// Every kept row has a row of the same key at its token or above (by_key),
// or, compared as multisets, the new rows' tokens from the highest down are
// each at or above the kept ones.
void RequireCovered(const char *name, RowTokens *dropped, RowTokens *now, bool by_key) {
    if (!by_key) {
        for (RowTokens *r : {dropped, now})
            for (int64 i = 0; i < r->count; ++i) r->items[i].key_hash = 0;
    }
    std::sort(dropped->items, dropped->items + dropped->count, KeyThenTokenDown);
    std::sort(now->items, now->items + now->count, KeyThenTokenDown);
    int64 j = 0;
    for (int64 i = 0; i < dropped->count; ++i) {
        const RowToken &d = dropped->items[i];
        if (by_key) {
            if (i > 0 && dropped->items[i - 1].key_hash == d.key_hash)
                continue;  // only the key's highest token counts
            while (j < now->count && now->items[j].key_hash < d.key_hash) ++j;
            bool found = j < now->count && now->items[j].key_hash == d.key_hash;
            if (!found || now->items[j].token < d.token)
                RefuseMissedWrite(name, d.token, found, found ? now->items[j].token : 0, true);
        } else {
            bool found = i < now->count;
            if (!found || now->items[i].token < d.token)
                RefuseMissedWrite(name, d.token, found, found ? now->items[i].token : 0, false);
        }
    }
}

// Whether any leaf has a row, read with the latest snapshot.
bool AnyRow(const List *leaves, const char *token_column) {
    Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
    bool any = false;
    ForEachTokenLeaf(leaves, token_column, [&](Relation rel, AttrNumber) {
        TableScanDesc scan = BeginTableScan(rel, snapshot);
        TupleTableSlot *slot = table_slot_create(rel, nullptr);
        any = any || table_scan_getnextslot(scan, ForwardScanDirection, slot);
        ExecDropSingleTupleTableSlot(slot);
        table_endscan(scan);
    });
    UnregisterSnapshot(snapshot);
    return any;
}

// An empty table takes the name: the recreate removed the dropped table's
// rows, as a DELETE of each would have, so each key leaves its tombstone at
// its highest token under home.
void TombstoneKeptRows(Oid home, RowTokens *dropped) {
    RefuseTombstoneWhilePublished(home);
    std::sort(dropped->items, dropped->items + dropped->count, KeyThenTokenDown);
    InternalSession access;
    BeginInternal(&access);
    for (int64 i = 0; i < dropped->count; ++i) {
        const RowToken &d = dropped->items[i];
        if (i > 0 && dropped->items[i - 1].key_hash == d.key_hash)
            continue;
        RaiseTombstone(home, d.key, d.token);
    }
    EndInternal(&access);
}

}  // namespace

namespace {

struct SortedHashes {
    uint64 *hashes;
    int64 count;
};

bool HasHash(void *arg, uint64 hash) {
    auto *set = static_cast<SortedHashes *>(arg);
    return std::binary_search(set->hashes, set->hashes + set->count, hash);
}

// The key hashes of the old table's rows, when it is keyed as home is: the
// live old_relid's, or (InvalidOid) those the DROP of old_table kept.
bool OldKeyHashes(Oid home, Oid old_relid, const char *old_table, const char *token_column,
                  SortedHashes *out) {
    Relation rel = table_open(home, NoLock);
    char *key_columns = KeyColumns(rel);
    table_close(rel, NoLock);
    RowTokens rows = {CurrentMemoryContext, false, nullptr, 0, 0, 0, SIZE_MAX, false};
    if (OidIsValid(old_relid)) {
        Relation old = table_open(old_relid, NoLock);
        bool same = SameKey(KeyColumns(old), key_columns);
        table_close(old, NoLock);
        if (!same)
            return false;
        CollectRows(find_all_inheritors(old_relid, NoLock, nullptr), token_column, key_columns,
                    &rows);
    } else {
        KeptRows *entry = kept;
        while (entry != nullptr && strcmp(entry->name, old_table) != 0) entry = entry->next;
        if (entry == nullptr || entry->rows.overflow || !SameKey(entry->key_columns, key_columns))
            return false;
        rows = entry->rows;
    }
    out->hashes = static_cast<uint64 *>(palloc(sizeof(uint64) * (rows.count > 0 ? rows.count : 1)));
    out->count = 0;
    for (int64 i = 0; i < rows.count; ++i)
        if (rows.items[i].key_hash != 0)
            out->hashes[out->count++] = rows.items[i].key_hash;
    std::sort(out->hashes, out->hashes + out->count);
    return true;
}

}  // namespace

void RequireNoRowBelowTombstone(Oid home, const char *token_column, const char *old_label,
                                const char *old_table, Oid old_relid) {
    List *leaves = find_all_inheritors(home, NoLock, nullptr);
    SortedHashes old_hashes;
    OldKeys old_keys = {HasHash, &old_hashes};
    bool by_old_keys = OldKeyHashes(home, old_relid, old_table, token_column, &old_hashes);
    ForEachTokenLeaf(leaves, token_column, [&](Relation rel, AttrNumber token_attnum) {
        Token offered, hwm;
        bool has_token, floor, unkeyed;
        if (!RowBelowTombstone(rel, home, token_attnum, &has_token, &offered, &hwm, &floor,
                               &unkeyed, true, by_old_keys ? &old_keys : nullptr))
            return;
        ereport(ERROR,
                (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                 errmsg("table %s cannot take the fencing state of %s: it holds a row deleted "
                        "from there after the copy",
                        RelName(home), old_label),
                 errdetail("A row of %s carries %s, %s its key's tombstone at " INT64_FORMAT
                           ": the DELETE that left it would be undone, and writers with tokens "
                           "in between accepted.",
                           RelName(RelationGetRelid(rel)),
                           has_token ? psprintf("token " INT64_FORMAT, offered) : "no token",
                           has_token && offered == hwm ? "a key the copied table no longer has, at"
                                                       : "below",
                           hwm),
                 errhint("Retry with every writer kept out from the copy on (LOCK TABLE %s IN "
                         "SHARE MODE before copying), or copy with a sync trigger that also "
                         "deletes.",
                         old_table)));
    });
}

void RequireNoLiveRowBelowAttachedTombstone(Oid home, const char *token_column,
                                            const char *attached) {
    // Writers to the other partitions are kept out until the ATTACH commits
    // (it holds the parent in a mode they pass).
    List *leaves = find_all_inheritors(home, ShareLock, nullptr);
    CommandCounterIncrement();  // the tombstones just merged
    ForEachTokenLeaf(leaves, token_column, [&](Relation rel, AttrNumber token_attnum) {
        Token offered, hwm;
        bool has_token, floor, unkeyed;
        if (!RowBelowTombstone(rel, home, token_attnum, &has_token, &offered, &hwm, &floor,
                               &unkeyed, true, nullptr))
            return;
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("cannot attach %s to fenced table %s: it has a tombstone for a key "
                        "that has a live row there",
                        attached, RelName(home)),
                 errdetail("A row of %s carries %s, below the tombstone at " INT64_FORMAT
                           " that %s brings for its key; the row would go on judging writes "
                           "below the key's high-water mark.",
                           RelName(RelationGetRelid(rel)),
                           has_token ? psprintf("token " INT64_FORMAT, offered) : "no token",
                           hwm, attached),
                 errhint("Raise that row's token to at least " INT64_FORMAT
                         " (an UPDATE under that token) before attaching, or remove %s's "
                         "tombstones with fencing_reset(%s) (logged in fencing.reset_log).",
                         hwm, attached, quote_literal_cstr(attached))));
    });
}

bool KeepDroppedRows(Oid home, const List *going) {
    ProtectedRow policy;
    InternalSession access;
    BeginInternal(&access);
    bool fenced = ReadProtectedRow(home, &policy);
    EndInternal(&access);
    if (!fenced)
        return false;
    List *leaves = NIL;
    ListCell *lc;
    foreach (lc, find_all_inheritors(home, NoLock, nullptr))
        if (list_member_oid(going, lfirst_oid(lc)))
            leaves = lappend_oid(leaves, lfirst_oid(lc));
    RegisterCallbacksOnce();
    MemoryContext caller = MemoryContextSwitchTo(TopTransactionContext);
    auto *entry = static_cast<KeptRows *>(palloc0(sizeof(KeptRows)));
    entry->name = QualifiedName(home);
    Relation rel = table_open(home, NoLock);  // locked by the DROP
    // Row scope keys each row by its (canonical) primary key; the other scopes
    // need not have one that can key anything: their rows compare as a multiset.
    entry->key_columns = policy.scope == Scope::kRow ? KeyColumns(rel) : nullptr;
    table_close(rel, NoLock);
    entry->nest_level = GetCurrentTransactionNestLevel();
    entry->rows.context = TopTransactionContext;
    entry->rows.keep_keys = entry->key_columns != nullptr;
    // A bound on what a DROP keeps in memory (maintenance_work_mem is in kB).
    entry->rows.limit = static_cast<Size>(maintenance_work_mem) * 1024 * 4;
    MemoryContextSwitchTo(caller);
    CollectRows(leaves, policy.token_column, entry->key_columns, &entry->rows);
    if (entry->rows.count == 0)
        return false;
    entry->next = kept;
    kept = entry;
    return true;
}

void KeepDroppedUnseenWrite(Oid home, const char *why) {
    RegisterCallbacksOnce();
    MemoryContext caller = MemoryContextSwitchTo(TopTransactionContext);
    auto *entry = static_cast<UnseenWrite *>(palloc(sizeof(UnseenWrite)));
    entry->name = QualifiedName(home);
    entry->why = pstrdup(why);
    entry->nest_level = GetCurrentTransactionNestLevel();
    entry->next = unseen;
    unseen = entry;
    MemoryContextSwitchTo(caller);
}

}  // namespace fencing::pg

using namespace fencing::pg;

// fencing.require_dropped_rows(rel oid, name text, token_column text, scope
// text), from fencing.adopt_dropped_state once rel holds the dropped table's
// tombstones (not granted to PUBLIC): raises 40001 when rel does not hold
// every row the dropped table of that name held at its DROP, or holds a row
// below its key's tombstone.
FENCING_FUNCTION(fencing_require_dropped_rows) {
    Oid relid = PG_GETARG_OID(0);
    char *name = text_to_cstring(PG_GETARG_TEXT_PP(1));
    char *token_column = text_to_cstring(PG_GETARG_TEXT_PP(2));
    bool row_scope = strcmp(text_to_cstring(PG_GETARG_TEXT_PP(3)), "row") == 0;
    // No writer of the new table's rows while they are compared (the table
    // itself too: find_all_inheritors locks only what is under it).
    LockRelationOid(relid, ShareLock);
    List *leaves = find_all_inheritors(relid, ShareLock, nullptr);
    // The adoption raises relid's floor to the dropped table's.
    HoldTombstoneFloorForRaise(relid);
    for (UnseenWrite *u = unseen; u != nullptr; u = u->next)
        if (strcmp(u->name, name) == 0)
            RefuseChangedSinceRead(name, psprintf("table %s taking its name", RelName(relid)),
                                   u->why);
    if (row_scope)
        RequireNoRowBelowTombstone(relid, token_column, psprintf("the dropped table %s", name),
                                   name, InvalidOid);
    KeptRows *entry = kept;
    while (entry != nullptr && strcmp(entry->name, name) != 0) entry = entry->next;
    if (entry == nullptr)
        PG_RETURN_VOID();
    Relation rel = table_open(relid, NoLock);
    char *key_columns = KeyColumns(rel);
    table_close(rel, NoLock);
    bool by_key = SameKey(entry->key_columns, key_columns);
    RowTokens now = {CurrentMemoryContext, false, nullptr, 0, 0, 0, SIZE_MAX, false};
    CollectRows(leaves, token_column, by_key ? key_columns : nullptr, &now);
    RowTokens dropped = entry->rows;
    if (dropped.overflow)
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("table %s cannot take the fencing state of the dropped table of that "
                        "name: the dropped table had too many rows to check the copy against",
                        name),
                 errdetail("A DROP keeps its rows' keys and tokens in memory up to four times "
                           "maintenance_work_mem, to refuse a copy that missed a write."),
                 errhint("Raise maintenance_work_mem for the migration (SET LOCAL "
                         "maintenance_work_mem before the DROP) and retry; or hand the state "
                         "over before the DROP with fencing_transfer_state(); or, to start the "
                         "table afresh, SELECT fencing_forget_dropped(%s) (logged in "
                         "fencing.reset_log).",
                         quote_literal_cstr(name))));
    if (now.count == 0 && !AnyRow(leaves, token_column)) {
        // Table and resource scope judge every write by HWMs the state
        // carries; row scope's rows leave their tombstones.
        if (entry->key_columns == nullptr)
            PG_RETURN_VOID();
        if (!by_key)
            ereport(ERROR,
                    (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                     errmsg("table %s cannot take the fencing state of the dropped table of that "
                            "name: it has no primary key (%s) to keep the dropped rows' tombstones "
                            "under",
                            name, entry->key_columns),
                     errdetail("The dropped table's rows leave tombstones, as a DELETE of each "
                               "would, so that a stale writer cannot bring a key back."),
                     errhint("Give the new table the primary key (%s), or, to start it afresh, "
                             "discard the state first: SELECT fencing_forget_dropped(%s) (logged "
                             "in fencing.reset_log).",
                             entry->key_columns, quote_literal_cstr(name))));
        TombstoneKeptRows(relid, &dropped);
        PG_RETURN_VOID();
    }
    RequireCovered(name, &dropped, &now, by_key);
    PG_RETURN_VOID();
}
