// DDL that would orphan, reset or bypass a high-water mark: refused, or its
// fencing state carried over (see pg/ddl/checks.hpp).
#include "pg/ddl/checks.hpp"

#include "pg/hwm/lock.hpp"
#include "pg/hwm/store.hpp"
#include "pg/hwm/tombstones.hpp"

#include "core/policy.hpp"
#include "pg/base/boundary.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/guard/install.hpp"
#include "pg/base/guc.hpp"
#include "pg/ddl/dropped_rows.hpp"
#include "pg/ddl/partition_removal.hpp"
#include "pg/ddl/citus_moves.hpp"
#include "pg/ddl/type_change.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/keys/row_key.hpp"
#include "pg/types/token_type.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/tablecmds.h"
#include "storage/lmgr.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "utils/snapmgr.h"
#include "nodes/makefuncs.h"
#include "nodes/parsenodes.h"
#include "parser/parse_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace fencing::pg {

// Raises if relid inherits (plain inheritance) from a fenced table: writes
// through the parent would reach its rows without the parent's policy.
void RequireNoFencedAncestor(Oid relid);

namespace {

// The guard policy of relid, or of its first guarded leaf (partitioned tables).
bool FencedPolicy(Oid relid, Policy *policy) {
    List *leaves = GuardedRelations(relid, NoLock);
    ListCell *lc;
    foreach (lc, leaves)
        if (GuardPolicy(lfirst_oid(lc), policy))
            return true;
    return false;
}

// The OIDs in column result_att of the catalog rows whose OID column key_att
// equals value (through index, or a sequential scan when it is InvalidOid).
List *CatalogOids(Oid catalog, Oid index, AttrNumber key_att, Oid value, AttrNumber result_att) {
    List *oids = NIL;
    Relation rel = table_open(catalog, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, key_att, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(value));
    SysScanDesc scan = systable_beginscan(rel, index, OidIsValid(index), nullptr, 1, &key);
    HeapTuple tup;
    while (HeapTupleIsValid(tup = systable_getnext(scan))) {
        bool isnull;
        Datum d = heap_getattr(tup, result_att, RelationGetDescr(rel), &isnull);
        if (!isnull)
            oids = lappend_oid(oids, DatumGetObjectId(d));
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return oids;
}

// The plain-inheritance (not partition) parents of relid.
List *InheritanceParents(Oid relid) {
    return CatalogOids(InheritsRelationId, InheritsRelidSeqnoIndexId, Anum_pg_inherits_inhrelid,
                       relid, Anum_pg_inherits_inhparent);
}

// A fenced table that relid inherits from (directly or not) by plain
// inheritance, or InvalidOid. Partitions are fenced by their parent's policy.
Oid FencedInheritanceAncestor(Oid relid) {
    if (get_rel_relkind(relid) != RELKIND_RELATION || get_rel_relispartition(relid))
        return InvalidOid;
    List *todo = InheritanceParents(relid);
    List *seen = NIL;
    for (int i = 0; i < list_length(todo); ++i) {
        Oid parent = list_nth_oid(todo, i);
        if (list_member_oid(seen, parent))
            continue;
        seen = lappend_oid(seen, parent);
        Policy policy;
        if (GuardPolicy(parent, &policy))
            return parent;
        todo = list_concat(todo, InheritanceParents(parent));
    }
    return InvalidOid;
}

// Why a column cannot carry fencing state, or nullptr: generated columns are
// computed after BEFORE ROW triggers (the guard would judge the old value);
// an identity token column hands every writer a fresh token.
const char *ComputedColumn(Oid relid, AttrNumber attnum, bool is_token) {
    HeapTuple tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(attnum));
    if (!HeapTupleIsValid(tup))
        return nullptr;
    auto *att = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tup));
    const char *why = nullptr;
    if (att->attgenerated != '\0')
        why = "generated";
    else if (is_token && att->attidentity != '\0')
        why = "an identity column";
    ReleaseSysCache(tup);
    return why;
}

[[noreturn]] void RefuseComputed(Oid relid, const char *what, AttrNumber attnum, const char *why) {
    ereport(ERROR,
            (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
             errmsg("table %s cannot be fenced: its %s column \"%s\" is %s", RelName(relid), what,
                    get_attname(relid, attnum, false), why),
             errdetail("Generated columns are computed after BEFORE ROW triggers, so the guard "
                       "would judge the old value; an identity token column gives every writer "
                       "a fresh token."),
             errhint("Make it a plain column that writers set, or create the table with "
                     "fencing.auto_protect = off and leave it unfenced.")));
    pg_unreachable();
}

// The primary key constraint's name, or nullptr.
const char *PrimaryKeyName(Oid relid) {
    Relation rel = table_open(relid, AccessShareLock);
    Oid index = PrimaryKeyIndex(rel);
    table_close(rel, AccessShareLock);
    if (!OidIsValid(index))
        return nullptr;
    return get_rel_name(index);
}

bool InPrimaryKey(Oid relid, AttrNumber attnum) {
    Relation rel = table_open(relid, AccessShareLock);
    PrimaryKey pk;
    bool found = false;
    if (GetPrimaryKey(rel, &pk))
        for (int i = 0; i < pk.natts; ++i) found = found || pk.attnums[i] == attnum;
    table_close(rel, AccessShareLock);
    return found;
}

bool HomeHasTombstones(Oid home) {
    InternalSession access;
    BeginInternal(&access);
    bool has = HasTombstones(home);
    EndInternal(&access);
    return has;
}

// Whether values of type can contain a label of enum_type (their binary and
// text forms then spell the label).
bool TypeMentions(Oid type, Oid enum_type, int depth) {
    if (depth > 8 || !OidIsValid(type))
        return false;
    Oid base = getBaseType(type);
    if (base == enum_type)
        return true;
    Oid elem = get_element_type(base);
    if (OidIsValid(elem))
        return TypeMentions(elem, enum_type, depth + 1);
    Oid typrel = get_typ_typrelid(base);
    if (!OidIsValid(typrel))
        return false;
    Relation rel = relation_open(typrel, AccessShareLock);
    TupleDesc desc = RelationGetDescr(rel);
    bool found = false;
    for (int i = 0; i < desc->natts && !found; ++i)
        found = !TupleDescAttr(desc, i)->attisdropped &&
                TypeMentions(TupleDescAttr(desc, i)->atttypid, enum_type, depth + 1);
    relation_close(rel, AccessShareLock);
    return found;
}

// --- ddl_command_start ---------------------------------------------------

// Whether any row of rel (a table, locked) has a non-NULL value in column
// attnum, read with the latest snapshot.
bool AnyRowHasValue(Oid rel, AttrNumber attnum) {
    Relation r = table_open(rel, NoLock);
    Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
    TableScanDesc scan = BeginTableScan(r, snapshot);
    TupleTableSlot *slot = table_slot_create(r, nullptr);
    bool found = false;
    while (!found && table_scan_getnextslot(scan, ForwardScanDirection, slot)) {
        CHECK_FOR_INTERRUPTS();
        bool isnull;
        slot_getattr(slot, attnum, &isnull);
        found = !isnull;
    }
    ExecDropSingleTupleTableSlot(slot);
    table_endscan(scan);
    UnregisterSnapshot(snapshot);
    table_close(r, NoLock);
    return found;
}

// DROP COLUMN of the token column of fenced relation rel. With the column
// gone the table is no longer fenced, and a fencing_token column added again
// fences it from scratch in row scope: the rows' tokens (their HWMs in row
// scope) and a table HWM would no longer count. Refused while they exist.
void CheckTokenColumnDrop(Oid named, Oid rel, const Policy &p, const char *column) {
    // The locks DROP COLUMN takes anyway, taken now: no writer is in flight
    // while the rows are read, and none comes before the column is gone.
    LockRelationOid(named, AccessExclusiveLock);
    LockRelationOid(rel, AccessExclusiveLock);
    const char *why = nullptr;
    if (AnyRowHasValue(rel, p.token_attnum)) {
        why = "its rows carry tokens";
    } else if (p.scope == Scope::kResource) {
        // Its HWMs are its namespace's, shared with other tables and leases:
        // re-added, the column would fence the table in row scope, apart
        // from them, even with no row left here.
        why = "its high-water marks are kept per resource, in its namespace";
    } else if (p.scope == Scope::kTable) {
        InternalSession access;
        BeginInternal(&access);
        Datum relid = ObjectIdGetDatum(p.home_relid);
        bool has_table, has_tombstone;
        Token table_hwm, tomb_hwm;
        MaxStoredHwms(PointerGetDatum(construct_array(&relid, 1, OIDOID, sizeof(Oid), true, 'i')),
                      &has_table, &table_hwm, &has_tombstone, &tomb_hwm);
        EndInternal(&access);
        if (has_table)
            why = "it has a table high-water mark";
    }
    if (why == nullptr)
        return;
    const char *home = RelName(p.home_relid);
    ereport(
        ERROR,
        (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
         errmsg("cannot drop the token column \"%s\" of fenced table %s: %s", column, home, why),
         errdetail("Without its token column %s is no longer fenced, and a fencing_token "
                   "column added again fences it from scratch in row scope: the tokens "
                   "and high-water marks it has now would no longer count, and a stale "
                   "writer's lower token would be accepted.",
                   home),
         errhint("Keep the column. If %s really is to stop being fenced, call "
                 "fencing_unprotect(%s) first, then drop the column.",
                 home, quote_literal_cstr(home))));
}

// Records rel's primary key before it is dropped (fencing.hold_key).
// False, holding nothing, before ALTER EXTENSION UPDATE to 1.6 (its SQL has
// no held keys): the DROP CONSTRAINT is then refused, as it was.
bool HoldPrimaryKey(Oid rel) {
    InternalSession access;
    BeginInternal(&access);
    bool installed = ExtensionFunctionInstalled("fencing.hold_key(oid)");
    if (installed) {
        Oid types[] = {OIDOID};
        Datum values[] = {ObjectIdGetDatum(rel)};
        RunInternalSql("SELECT fencing.hold_key($1)", 1, types, values, nullptr, false);
    }
    EndInternal(&access);
    return installed;
}

// A subcommand of ALTER TABLE on fenced relation rel, refused when it would
// orphan or rewrite fencing state: dropping the token column while it keys
// state, changing the type of the token or resource column, changing or
// dropping a row-scope primary key that has tombstones.
void CheckAlterTableCmd(Oid named, Oid rel, const Policy &p, AlterTableCmd *cmd) {
    bool row = p.scope == Scope::kRow;
    AttrNumber attnum = InvalidAttrNumber;
    if (cmd->name != nullptr &&
        (cmd->subtype == AT_AlterColumnType || cmd->subtype == AT_DropColumn))
        attnum = get_attnum(rel, cmd->name);
    if (cmd->subtype == AT_DropColumn && attnum > 0 && attnum == p.token_attnum)
        CheckTokenColumnDrop(named, rel, p, cmd->name);
    const char *home = RelName(p.home_relid);
    if (cmd->subtype == AT_AlterColumnType && attnum > 0 &&
        (attnum == p.token_attnum ||
         (p.scope == Scope::kResource && attnum == p.resource_attnum)) &&
        !(attnum == p.token_attnum && KeepsTokens(rel, attnum, cmd)))
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("cannot change the type of the %s column \"%s\" of fenced table %s",
                        attnum == p.token_attnum ? "token" : "resource", cmd->name, home),
                 attnum == p.token_attnum
                     ? errdetail("Rewriting the token column (ALTER ... TYPE ... USING) would "
                                 "replace every row's high-water mark without a trace in "
                                 "fencing.reset_log.")
                     : errdetail("Resource high-water marks are keyed by the value's text; a "
                                 "new type would key them differently and orphan them."),
                 errhint("Keep the column's type%s. To change it anyway, fencing_unprotect() "
                         "the table first: it is then unfenced, and its %s.",
                         attnum == p.token_attnum
                             ? " (a bigint token column converts in place: ALTER COLUMN ... "
                               "TYPE fencing_token, with no USING but the column)"
                             : "",
                         attnum == p.token_attnum
                             ? "row high-water marks become whatever the new column holds"
                             : "resource high-water marks stay under the old texts")));
    bool key_change = false;
    if (row && attnum > 0 && (cmd->subtype == AT_AlterColumnType || cmd->subtype == AT_DropColumn))
        key_change = InPrimaryKey(rel, attnum);
    if (row && cmd->subtype == AT_DropConstraint && cmd->name != nullptr) {
        const char *own = PrimaryKeyName(rel);
        const char *named_pk = PrimaryKeyName(named);
        key_change = (own != nullptr && strcmp(own, cmd->name) == 0) ||
                     (named_pk != nullptr && strcmp(named_pk, cmd->name) == 0);
    }
    if (key_change && cmd->subtype == AT_AlterColumnType && HomeHasTombstones(p.home_relid) &&
        CarryTombstonesThroughKeyType(named, rel, p.home_relid, attnum, cmd))
        key_change = false;
    // Dropping the key of an unpartitioned table (Alembic's batch recreate
    // drops the old table's constraints before it copies it): the key is held
    // (fencing.hold_key), the table refuses writes until the same key is
    // added back, and a DROP of the table keeps its tombstones under it.
    if (key_change && cmd->subtype == AT_DropConstraint && rel == p.home_relid && named == rel &&
        get_rel_relkind(rel) == RELKIND_RELATION && HomeHasTombstones(p.home_relid) &&
        HoldPrimaryKey(rel))
        return;
    if (key_change && HomeHasTombstones(p.home_relid))
        ereport(
            ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("cannot change the primary key of fenced table %s: it has tombstones", home),
             errdetail("Tombstones of deleted rows are keyed by the primary key columns' "
                       "binary form; a changed or dropped key would orphan them, and a stale "
                       "writer could re-insert a deleted row."),
             errhint("Keep the primary key as it is (an integer key column may change to "
                     "another integer type: its tombstones are rekeyed). To change it anyway, "
                     "remove the tombstones with fencing_reset(%s) first (logged in "
                     "fencing.reset_log): deleted keys can then be re-inserted with any "
                     "token.",
                     quote_literal_cstr(home))));
}

// Carries the fencing state kept under sources (tombstones, table HWMs) into
// home's keys, keeping the maximum, and removes it from the sources. Refuses
// when home's scope cannot keep it.
void CarryState(Oid home, const char *attached, List *sources) {
    InternalSession access;
    BeginInternal(&access);
    ProtectedRow row;
    if (!ReadProtectedRow(home, &row)) {
        EndInternal(&access);
        return;
    }
    int n = list_length(sources);
    Datum *oids = static_cast<Datum *>(palloc(sizeof(Datum) * n));
    for (int i = 0; i < n; ++i) oids[i] = ObjectIdGetDatum(list_nth_oid(sources, i));
    Datum relids = PointerGetDatum(construct_array(oids, n, OIDOID, sizeof(Oid), true, 'i'));
    // The sources are locked (OnAttach), so none of their writers is in
    // flight; fencing_advance() raises a table HWM without a table lock.
    for (int i = 0; i < n; ++i) HoldTableHwm(list_nth_oid(sources, i));
    bool has_table, has_tombstone;
    Token table_hwm, tomb_hwm;
    MaxStoredHwms(relids, &has_table, &table_hwm, &has_tombstone, &tomb_hwm);
    bool table_null = !has_table, tomb_null = !has_tombstone;
    if (table_null && tomb_null) {
        EndInternal(&access);
        return;
    }
    if (row.scope == Scope::kResource || (row.scope == Scope::kRow && !table_null))
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("cannot attach %s to fenced table %s: it has its own %s", attached,
                        RelName(home), table_null ? "tombstones" : "table high-water mark"),
                 errdetail("%s is fenced in %s scope, which cannot keep them; attaching would "
                           "discard them.",
                           RelName(home), ScopeName(row.scope)),
                 errhint("Remove them with fencing_reset(%s) first (logged in "
                         "fencing.reset_log), or attach to a table fenced in %s scope.",
                         quote_literal_cstr(attached), table_null ? "row or table" : "table")));
    if (row.scope == Scope::kRow)
        MergeTombstones(relids, home);
    else
        MergeTableHwm(home, table_null  ? tomb_hwm
                            : tomb_null ? table_hwm
                                        : Max(table_hwm, tomb_hwm));
    DropStoredHwms(relids);
    EndInternal(&access);
    if (row.scope == Scope::kRow)
        RequireNoLiveRowBelowAttachedTombstone(home, row.token_column, attached);
    ereport(NOTICE, (errmsg("fencing state of %s carried over to %s", attached, RelName(home))));
}

// Rows an ATTACH brings into a row-scope home are judged there by their own
// tokens from then on, so each is judged first as an INSERT of its key into
// the home would be: against the home's tombstone of the key, or without one
// its floor (before the partition's state is carried over). A row below it
// would admit every writer in between: the ATTACH is refused.
void RefuseStaleAttachedRows(Oid home, const ProtectedRow &row, const char *attached,
                             List *leaves) {
    ListCell *lc;
    foreach (lc, leaves) {
        Oid leaf = lfirst_oid(lc);
        AttrNumber att = get_attnum(leaf, row.token_column);
        if (get_rel_relkind(leaf) != RELKIND_RELATION || att == InvalidAttrNumber)
            continue;
        Relation rel = table_open(leaf, NoLock);  // locked by OnAttach
        Token offered, hwm;
        bool floor, has_token, unkeyed;
        bool below =
            RowBelowTombstone(rel, home, att, &has_token, &offered, &hwm, &floor, &unkeyed);
        table_close(rel, NoLock);
        if (unkeyed)
            ereport(ERROR,
                    (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                     errmsg("cannot attach %s to fenced table %s: %s has rows and no primary key",
                            attached, RelName(home), RelName(leaf)),
                     errdetail("Each attached row is judged against its key's tombstone or floor "
                               "under %s, which needs the row's primary key.",
                               RelName(home)),
                     errhint("Add the primary key %s has to %s before attaching.", RelName(home),
                             RelName(leaf))));
        if (below)
            ereport(
                ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("cannot attach %s to fenced table %s: a row carries a stale token",
                        attached, RelName(home)),
                 errdetail("A row of %s carries %s, below the high-water mark " INT64_FORMAT
                           " its key has under %s (%s); attached, it would admit writers with "
                           "tokens in between.",
                           RelName(leaf),
                           has_token ? psprintf("token " INT64_FORMAT, offered) : "no token", hwm,
                           RelName(home),
                           floor ? "the floor: the key has no tombstone there" : "its tombstone"),
                 errhint("Write the row with a current token, or delete it, before "
                         "attaching.")));
    }
}

// ATTACH PARTITION into a fenced partitioned table: the state the partition
// kept as its own home (tombstones, a table HWM) is carried into its new
// home's, or the ATTACH refused, so no stale writer gets past it there.
// home's protection row, when it keys rows (the rows an ATTACH brings are
// then judged, RefuseStaleAttachedRows).
bool RowScopeHome(Oid home, ProtectedRow *row) {
    InternalSession access;
    BeginInternal(&access);
    bool row_scope = ReadProtectedRow(home, row) && row->scope == Scope::kRow;
    EndInternal(&access);
    return row_scope;
}

// The parent's default partition (if any) and the attach lock: no
// fencing_advance of the home's keys between the judgement of the attached
// rows and the commit, one in flight waited for (its tombstone is then
// judged by), one to come waiting to find the attached row
// (pg/hwm/lock.hpp). Neither is waited for while the other is held: a
// transaction may write the default partition and then advance, or advance
// and then write it, and a plain ATTACH waiting for it would not deadlock.
void LockDefaultAndAttach(Oid home, Oid default_part) {
    bool has_default = OidIsValid(default_part);
    for (;;) {
        if (has_default)
            LockRelationOid(default_part, AccessExclusiveLock);
        if (ConditionalLockAttachExclusive(home))
            return;
        if (has_default)
            UnlockRelationOid(default_part, AccessExclusiveLock);
        LockAttachExclusive(home);
        if (!has_default || ConditionalLockRelationOid(default_part, AccessExclusiveLock))
            return;
        UnlockAttachExclusive(home);
    }
}

void OnAttach(Oid parent, PartitionCmd *cmd) {
    Oid part = RangeVarGetRelid(cmd->name, NoLock, true);
    if (!OidIsValid(part) || !OwnsRelation(part, GetUserId()))
        return;
    // A parent without partitions yet has no guard: then its own policy row, if any.
    Policy policy;
    Oid home = FencedPolicy(parent, &policy) ? policy.home_relid : parent;
    // The locks ATTACH takes anyway, taken now (ddl_command_start runs before
    // them): the state read below must be the sources' last, with no writer
    // of theirs still in flight and none to come.
    ProtectedRow row;
    bool row_scope = RowScopeHome(home, &row);
    LockRelationOid(part, AccessExclusiveLock);
    List *leaves = find_all_inheritors(part, AccessExclusiveLock, nullptr);
    // The parent's default partition too (ATTACH locks it as well, to move
    // rows of the new range out of it): a DELETE there of a key the attached
    // table holds would leave a tombstone after the rows were judged.
    Oid default_part = get_default_partition_oid(parent);
    if (row_scope)
        LockDefaultAndAttach(home, default_part);
    else if (OidIsValid(default_part))
        LockRelationOid(default_part, AccessExclusiveLock);
    if (row_scope)
        RefuseStaleAttachedRows(home, row, RelName(part), leaves);
    CarryState(home, RelName(part), leaves);
}

// A partition detached from a fenced table goes on being fenced on its
// own, by the policy and the high-water marks it was judged against.
void OnDetach(PartitionCmd *cmd) {
    Oid part = RangeVarGetRelid(cmd->name, NoLock, true);
    Policy policy;
    if (!OidIsValid(part) || !FencedPolicy(part, &policy) || policy.home_relid == part)
        return;
    bool row = policy.scope == Scope::kRow;
    // Row scope: the rows leave the home's tree, so each leaves a tombstone
    // under the home first. DETACH CONCURRENTLY commits its first half before
    // it waits for the partition's readers, and writers go on raising row
    // tokens in between, past any tombstone written here: refused.
    if (row && cmd->concurrent)
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("cannot detach partition %s of row-scope fenced table %s concurrently",
                        RelName(part), RelName(policy.home_relid)),
                 errdetail("Each detached row leaves a tombstone under %s in the DETACH's "
                           "transaction; DETACH CONCURRENTLY commits in two transactions and "
                           "lets writers raise the rows' tokens in between.",
                           RelName(policy.home_relid)),
                 errhint("Use ALTER TABLE ... DETACH PARTITION without CONCURRENTLY.")));
    // The state copied below must be what it is when the DETACH commits: the
    // partition locked as DETACH locks it (its writers, and the writes through
    // the parent, which CheckAlterTable locked, are done; in row scope every
    // partition under it too, whose rows are read), and the home's table HWM
    // held still, since writes to other partitions raise it too.
    LockRelationOid(part, cmd->concurrent ? ShareUpdateExclusiveLock : AccessExclusiveLock);
    if (row)
        (void)find_all_inheritors(part, AccessExclusiveLock, nullptr);
    HoldTableHwm(policy.home_relid);
    InternalSession access;
    BeginInternal(&access);
    Oid types[] = {OIDOID, OIDOID};
    Datum values[] = {ObjectIdGetDatum(policy.home_relid), ObjectIdGetDatum(part)};
    // fencing.protected_sync re-installs the partition's guards with itself as home.
    uint64 n = RunInternalSql(
        "INSERT INTO fencing.protected (relid, token_column, scope, resource_column,"
        " resource_namespace, on_stale, strict, require_token)"
        " SELECT $2, token_column, scope, resource_column, resource_namespace, on_stale,"
        " strict, require_token FROM fencing.protected WHERE relid OPERATOR(pg_catalog.=) $1",
        2, types, values, nullptr, false);
    CopyStoredHwms(policy.home_relid, part);
    EndInternal(&access);
    // After the copy: the detached table keeps its rows, and needs no
    // tombstones of them.
    if (row)
        TombstoneRowsUnder(part, policy.home_relid);
    if (n > 0)
        ereport(NOTICE, (errmsg("detached partition %s stays fenced on its own, with the policy "
                                "and high-water marks of %s",
                                RelName(part), RelName(policy.home_relid))));
}

// DETACH ... FINALIZE of a partition a DETACH CONCURRENTLY left detach-pending
// (refused in row scope above: so one started by an earlier version of the
// extension, or while this event trigger was disabled): in row scope the rows leave
// now, and leave tombstones under the parent's home first.
void OnDetachFinalize(Oid parent, PartitionCmd *cmd) {
    Oid part = RangeVarGetRelid(cmd->name, NoLock, true);
    if (!OidIsValid(part))
        return;
    // The parent's home: the pending partition may already be guarded as its
    // own (a DETACH CONCURRENTLY copies the policy in its first transaction).
    InternalSession access;
    BeginInternal(&access);
    ProtectedRow row;
    Oid home = parent;
    while (OidIsValid(home) && !ReadProtectedRow(home, &row))
        home = get_rel_relispartition(home) ? get_partition_parent(home, true) : InvalidOid;
    EndInternal(&access);
    if (!OidIsValid(home) || row.scope != Scope::kRow)
        return;
    LockRelationOid(part, AccessExclusiveLock);
    (void)find_all_inheritors(part, AccessExclusiveLock, nullptr);
    TombstoneRowsUnder(part, home);
}

// Typed tables of a composite type's relation (ALTER TYPE ... ALTER ATTRIBUTE).
List *TypedTables(Oid typrel) {
    return CatalogOids(RelationRelationId, InvalidOid, Anum_pg_class_reloftype,
                       get_rel_type_id(typrel), Anum_pg_class_oid);
}

void CheckAlterTable(AlterTableStmt *stmt) {
    // Nothing is checked or carried over for a caller PostgreSQL will refuse
    // anyway: our errors would tell a non-owner about the table's state.
    Oid named = RangeVarGetRelid(stmt->relation, NoLock, true);
    if (!OidIsValid(named) || !OwnsRelation(named, GetUserId()))
        return;
    List *targets;
    if (stmt->objtype == OBJECT_TYPE)
        targets = TypedTables(named);
    else if (stmt->relation->inh)
        targets = find_all_inheritors(named, NoLock, nullptr);
    else
        targets = GuardedRelations(named, NoLock);
    ListCell *lc, *cc;
    foreach (cc, stmt->cmds) {
        auto *cmd = static_cast<AlterTableCmd *>(lfirst(cc));
        if (cmd->subtype == AT_AttachPartition || cmd->subtype == AT_DetachPartition ||
            cmd->subtype == AT_DetachPartitionFinalize) {
            // The parent first, in the mode ALTER TABLE takes it, as it would
            // (OnAttach and OnDetach lock the partition next).
            LockRelationOid(named, AlterTableGetLockLevel(stmt->cmds));
            break;
        }
    }
    foreach (cc, stmt->cmds) {
        auto *cmd = static_cast<AlterTableCmd *>(lfirst(cc));
        if (cmd->subtype == AT_AttachPartition)
            OnAttach(named, castNode(PartitionCmd, cmd->def));
        else if (cmd->subtype == AT_DetachPartition)
            OnDetach(castNode(PartitionCmd, cmd->def));
        else if (cmd->subtype == AT_DetachPartitionFinalize)
            OnDetachFinalize(named, castNode(PartitionCmd, cmd->def));
        // Read from pg_trigger: a lock on each partition here, before
        // ALTER TABLE locks anything, would wait for every session loading one.
        foreach (lc, targets) {
            Policy policy;
            if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION &&
                GuardPolicyUnlocked(lfirst_oid(lc), &policy))
                CheckAlterTableCmd(named, lfirst_oid(lc), policy, cmd);
        }
    }
}

// ALTER TYPE ... RENAME VALUE of an enum that keys fencing state: tombstones
// and resource HWMs are stored under the label's text, which a rename would
// orphan.
// The column of rel (guarded by p) that keys fencing state and whose values
// can contain a label of enum_type: the resource column, or a primary key
// column in row scope (tombstones). InvalidAttrNumber when none.
AttrNumber EnumKeyedColumn(Oid rel, const Policy &p, Oid enum_type) {
    if (p.scope == Scope::kResource)
        return TypeMentions(get_atttype(rel, p.resource_attnum), enum_type, 0) ? p.resource_attnum
                                                                               : InvalidAttrNumber;
    if (p.scope != Scope::kRow)
        return InvalidAttrNumber;
    AttrNumber keyed = InvalidAttrNumber;
    Relation r = table_open(rel, AccessShareLock);
    PrimaryKey pk;
    if (GetPrimaryKey(r, &pk))
        for (int i = 0; i < pk.natts && keyed == InvalidAttrNumber; ++i)
            if (TypeMentions(get_atttype(rel, pk.attnums[i]), enum_type, 0))
                keyed = pk.attnums[i];
    table_close(r, AccessShareLock);
    return keyed;
}

[[noreturn]] void RefuseEnumRename(const AlterEnumStmt *stmt, Oid enum_type, Oid rel,
                                   const Policy &p, AttrNumber keyed) {
    ereport(ERROR,
            (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
             errmsg("cannot rename value \"%s\" of enum type %s: fenced table %s is keyed by it",
                    stmt->oldVal, format_type_be(enum_type), RelName(p.home_relid)),
             errdetail("%s of %s are stored under the label's text (column \"%s\"); "
                       "renaming it would orphan them and reset the high-water mark.",
                       p.scope == Scope::kRow ? "Tombstones" : "Resource high-water marks",
                       RelName(p.home_relid), get_attname(rel, keyed, false)),
             errhint("Add a new label with ALTER TYPE ... ADD VALUE and move rows to "
                     "it with fenced writes, or fencing_unprotect() the table first.")));
    pg_unreachable();
}

void CheckAlterEnum(AlterEnumStmt *stmt) {
    if (stmt->oldVal == nullptr)
        return;  // ADD VALUE keeps every existing label
    Oid enum_type = LookupTypeNameOid(nullptr, makeTypeNameFromNameList(stmt->typeName), true);
    if (!OidIsValid(enum_type) || !OwnsType(enum_type, GetUserId()))
        return;
    ListCell *lc, *leaf;
    foreach (lc, ProtectedRelids()) {
        if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(lfirst_oid(lc))))
            continue;
        foreach (leaf, GuardedRelations(lfirst_oid(lc), NoLock)) {
            Oid rel = lfirst_oid(leaf);
            Policy p;
            if (!GuardPolicy(rel, &p))
                continue;
            AttrNumber keyed = EnumKeyedColumn(rel, p, enum_type);
            if (keyed != InvalidAttrNumber)
                RefuseEnumRename(stmt, enum_type, rel, p, keyed);
        }
    }
}

// CREATE TABLE ... (LIKE fenced ...): LIKE copies columns, not the policy.
// Said in a NOTICE for each fenced source the caller may read whose policy
// is not what a new table gets anyway (row scope, on_stale error, not
// strict; require_token is the installed SQL's default either way, and shown
// in the DETAIL).
void CheckCreateLike(CreateStmt *stmt) {
    ListCell *lc;
    foreach (lc, stmt->tableElts) {
        if (!IsA(lfirst(lc), TableLikeClause))
            continue;
        auto *like = castNode(TableLikeClause, lfirst(lc));
        Oid source = RangeVarGetRelid(like->relation, NoLock, true);
        Policy policy;
        if (!OidIsValid(source) ||
            pg_class_aclcheck(source, GetUserId(), ACL_SELECT) != ACLCHECK_OK ||
            !FencedPolicy(source, &policy))
            continue;
        if (policy.scope == Scope::kRow && policy.on_stale == OnStale::kError && !policy.strict)
            continue;
        ereport(NOTICE,
                (errmsg("table \"%s\" takes the columns of fenced table %s, not its fencing "
                        "policy",
                        stmt->relation->relname, RelName(source)),
                 errdetail("%s is fenced in %s scope%s%s%s. LIKE copies columns (and what its "
                           "INCLUDING options name), never a policy: %s",
                           RelName(policy.home_relid), ScopeName(policy.scope),
                           policy.on_stale != OnStale::kError
                               ? psprintf(", on_stale %s", OnStaleName(policy.on_stale))
                               : "",
                           policy.strict ? ", strict" : "",
                           policy.require_token ? ", require_token" : "",
                           AutoProtectEnabled()
                               ? "like any new table with one fencing_token column, the new "
                                 "table is fenced on its own, in row scope with the defaults "
                                 "(fencing.auto_protect)."
                               : "with fencing.auto_protect off, the new table is not fenced."),
                 errhint("To fence it as %s is, call fencing_protect() on it with that "
                         "policy's arguments.",
                         RelName(policy.home_relid))));
    }
}

}  // namespace

namespace {

// A token column as the resource would name a new resource with every new
// token: no write could be stale.
void RequireResourceNotToken(Oid relid, AttrNumber token_attnum, AttrNumber resource_attnum) {
    if (resource_attnum > 0 && resource_attnum == token_attnum)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("the resource column of %s cannot be its token column \"%s\"",
                               RelName(relid), get_attname(relid, token_attnum, false)),
                        errdetail("Every write with a new token would name a new resource, so "
                                  "no write could ever be stale."),
                        errhint("Name the column that identifies the resource.")));
}

// The guard judges a column's value before the row is stored: a value
// computed later (generated, identity) would escape it.
void RequireNoComputedColumns(Oid relid, AttrNumber token_attnum, AttrNumber resource_attnum,
                              bool row_scope) {
    const char *why = ComputedColumn(relid, token_attnum, true);
    if (why != nullptr)
        RefuseComputed(relid, "token", token_attnum, why);
    if (resource_attnum > 0 && (why = ComputedColumn(relid, resource_attnum, false)) != nullptr)
        RefuseComputed(relid, "resource", resource_attnum, why);
    if (!row_scope)
        return;
    Relation rel = table_open(relid, AccessShareLock);
    PrimaryKey pk;
    bool has_pk = GetPrimaryKey(rel, &pk);
    table_close(rel, AccessShareLock);
    for (int i = 0; has_pk && i < pk.natts; ++i)
        if ((why = ComputedColumn(relid, pk.attnums[i], false)) != nullptr)
            RefuseComputed(relid, "primary key", pk.attnums[i], why);
}

// Writes through a parent reach its inheritance children's rows, which its
// guard does not judge.
void RequireNoInheritanceChildren(Oid relid) {
    if (get_rel_relkind(relid) != RELKIND_RELATION)
        return;
    List *children = find_inheritance_children(relid, NoLock);
    if (children != NIL)
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("table %s cannot be fenced: it has inheritance children", RelName(relid)),
                 errdetail("Writes through %s reach rows of %s, which its guard does not "
                           "judge.",
                           RelName(relid), RelName(linitial_oid(children))),
                 errhint("Use declarative partitioning (partitions take the parent's "
                         "policy), or create the column with fencing.auto_protect = off "
                         "and fence each table on its own.")));
}

// An unlogged table (or partition) loses its rows, and the HWMs they carry,
// in a crash.
void RequireLogged(Oid relid) {
    ListCell *lc;
    foreach (lc, lappend_oid(GuardedRelations(relid, NoLock), relid)) {
        if (get_rel_persistence(lfirst_oid(lc)) == RELPERSISTENCE_UNLOGGED)
            ereport(ERROR,
                    (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                     lfirst_oid(lc) == relid
                         ? errmsg("table %s cannot be fenced: it is unlogged", RelName(relid))
                         : errmsg("table %s cannot be fenced: its partition %s is unlogged",
                                  RelName(relid), RelName(lfirst_oid(lc))),
                     errdetail("An unlogged table is emptied after a crash, and the high-water "
                               "marks its rows carry go with them."),
                     errhint("Keep fenced tables logged, or create the table with "
                             "fencing.auto_protect = off and leave it unfenced.")));
    }
}

}  // namespace

void RequireFenceable(Oid relid, AttrNumber token_attnum, AttrNumber resource_attnum,
                      bool row_scope) {
    RequireResourceNotToken(relid, token_attnum, resource_attnum);
    RequireNoComputedColumns(relid, token_attnum, resource_attnum, row_scope);
    RequireNoInheritanceChildren(relid);
    RequireNoFencedAncestor(relid);
    RequireLogged(relid);
}

void RequireNoFencedAncestor(Oid relid) {
    Oid ancestor = FencedInheritanceAncestor(relid);
    if (OidIsValid(ancestor))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("table %s cannot inherit from fenced table %s", RelName(relid),
                               RelName(ancestor)),
                        errdetail("Writes through %s would reach its rows without %s's policy.",
                                  RelName(ancestor), RelName(ancestor)),
                        errhint("Use declarative partitioning (PARTITION OF), whose partitions "
                                "take the parent's policy.")));
}

void CheckAfterTableDdl(Oid relid) {
    char kind = get_rel_relkind(relid);
    if (kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE)
        return;
    // Plain inheritance from a fenced table, whether relid is fenced or not.
    RequireNoFencedAncestor(relid);
    ProtectedRow row;
    Oid home = relid;
    Policy policy;
    if (!ReadProtectedRow(relid, &row)) {
        if (kind != RELKIND_RELATION || !GuardPolicy(relid, &policy) ||
            !ReadProtectedRow(policy.home_relid, &row))
            return;
        home = policy.home_relid;
    }
    AttrNumber token = get_attnum(home, row.token_column);
    AttrNumber resource =
        row.scope == Scope::kResource ? get_attnum(home, row.resource_column) : InvalidAttrNumber;
    if (token <= 0 || (row.scope == Scope::kResource && resource <= 0))
        return;
    RequireFenceable(home, token, resource, row.scope == Scope::kRow);
}

}  // namespace fencing::pg

using namespace fencing::pg;

// The ddl_command_start event triggers: ALTER TABLE, ALTER TYPE
// (fencing_ddl_check_start), CREATE TABLE (fencing_ddl_check_create), and
// DROP TABLE, DROP SCHEMA, DROP OWNED, DROP TYPE (fencing_ddl_check_drop),
// CREATE and ALTER PUBLICATION (fencing_publication_check).
FENCING_FUNCTION(fencing_ddl_check_start) {
    if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("fencing.ddl_check_start() can only be called as an event "
                               "trigger")));
    Node *tree = reinterpret_cast<EventTriggerData *>(fcinfo->context)->parsetree;
    if (IsA(tree, AlterTableStmt))
        CheckAlterTable(castNode(AlterTableStmt, tree));
    else if (IsA(tree, AlterEnumStmt))
        CheckAlterEnum(castNode(AlterEnumStmt, tree));
    else if (IsA(tree, CreateStmt))
        CheckCreateLike(castNode(CreateStmt, tree));
    else if (IsA(tree, DropStmt) || IsA(tree, DropOwnedStmt))
        BeforeDrop(tree);
    else
        RefuseLosingPublication(tree);
    PG_RETURN_NULL();
}
