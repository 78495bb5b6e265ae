// fencing.guard(): the BEFORE ROW trigger installed on every protected table
// (or, for a partitioned table, on every leaf partition). It covers every
// write path that fires row triggers: INSERT (with ON CONFLICT DO UPDATE),
// UPDATE, DELETE, MERGE and COPY FROM.
//
// Row scope needs no extra statement on UPDATE and DELETE: PostgreSQL locks
// the old row (re-reading its newest version under READ COMMITTED, through
// EvalPlanQual) before BEFORE ROW triggers run, so the token in OLD is the
// row's committed HWM and stays so until this transaction ends.
#include "core/offer_rule.hpp"
#include "core/policy.hpp"
#include "pg/base/boundary.hpp"
#include "pg/hwm/durability.hpp"
#include "pg/base/errors.hpp"
#include "pg/base/guc.hpp"
#include "pg/hwm/store.hpp"
#include "pg/hwm/raise_registry.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/keys/resource_key.hpp"
#include "pg/keys/row_key.hpp"
#include "pg/base/stats.hpp"
#include "pg/catalog/subscriber.hpp"
#include "pg/catalog/citus_node.hpp"
#include "pg/hwm/tombstones.hpp"
#include "pg/types/token_type.hpp"
#include "pg/guard/fenced_call.hpp"
#include "pg/guard/recheck_batch.hpp"
#include "pg/guard/restored.hpp"
#include "pg/guard/triggers.hpp"
#include "pg/guard/unfenced.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/xact.h"
#include "access/sysattr.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/bitmapset.h"
#include "utils/lsyscache.h"
#include "utils/datum.h"
#include "utils/rel.h"
#include "utils/relcache.h"
}

namespace fencing::pg {
namespace {

struct GuardContext {
    TriggerData *trigger;
    Relation rel;
    Policy policy;
    const char *name_space;  // resource scope
    RowEvent event;
    HeapTuple old_row;  // UPDATE, DELETE
    HeapTuple new_row;  // INSERT, UPDATE
    // The firing's slots holding them (nullptr: none).
    TupleTableSlot *old_slot;
    TupleTableSlot *new_slot;
    // The token column of the old and the new row, where there is one.
    bool has_old_token;
    Token old_token;
    bool has_new_token;
    Token new_token;
};

[[noreturn]] void BadGuard(Relation rel, const char *why) {
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("fencing guard on table \"%s\" is invalid: %s",
                           RelationGetRelationName(rel), why),
                    errhint("Run fencing_protect() on the table again.")));
    pg_unreachable();
}

bool TokenAt(HeapTuple row, TupleDesc desc, int attnum, Token *out) {
    bool isnull;
    Datum d = heap_getattr(row, attnum, desc, &isnull);
    if (isnull)
        return false;
    *out = DatumGetInt64(d);
    return true;
}

// A column of row, held by the firing's slot (nullptr: none): from the slot
// when it has deformed the column already; else heap_getattr where the
// column's offset is known (every column before it of fixed width, no
// NULLs); else the slot deforms the row once for every column asked, where
// heap_getattr would walk it each time.
Datum ColumnOf(HeapTuple row, TupleTableSlot *slot, TupleDesc desc, int attnum, bool *isnull) {
    if (slot != nullptr && slot->tts_nvalid >= attnum) {
        *isnull = slot->tts_isnull[attnum - 1];
        return slot->tts_values[attnum - 1];
    }
    if (slot == nullptr ||
        (HeapTupleNoNulls(row) && AttrCacheOffset(desc, attnum - 1) >= 0))
        return heap_getattr(row, attnum, desc, isnull);
    return slot_getattr(slot, attnum, isnull);
}

bool TokenOf(TupleTableSlot *slot, HeapTuple row, TupleDesc desc, int attnum, Token *out) {
    if (row == nullptr)
        return false;
    bool isnull;
    Datum d = ColumnOf(row, slot, desc, attnum, &isnull);
    if (isnull)
        return false;
    *out = DatumGetInt64(d);
    return true;
}

// Errors name the protected table the caller wrote to: for a partition, its
// protected parent (the home relation of the policy).
const char *HomeName(const GuardContext &g) {
    return RelName(g.policy.home_relid);
}

// errtable() for the home relation: its schema and name in the error fields.
int HomeTable(const GuardContext &g) {
    Oid home = g.policy.home_relid;
    err_generic_string(PG_DIAG_SCHEMA_NAME, get_namespace_name(get_rel_namespace(home)));
    return err_generic_string(PG_DIAG_TABLE_NAME, get_rel_name(home));
}

// A column's quoted name, or a description without it when the caller may
// not read the column (errors never name what the caller cannot see).
const char *ColumnForCaller(const GuardContext &g, int attnum, const char *unnamed) {
    AttrNumber a = static_cast<AttrNumber>(attnum);
    if (!CallerMaySeeColumns(g.rel, g.policy.home_relid, &a, 1))
        return unnamed;
    return psprintf("\"%s\"", NameStr(TupleDescAttr(RelationGetDescr(g.rel), attnum - 1)->attname));
}

// "key (id)=(5)" -> "Key (id)=(5)", to open a DETAIL sentence.
const char *Capitalized(const char *text) {
    char *copy = pstrdup(text);
    if (copy[0] >= 'a' && copy[0] <= 'z')
        copy[0] = static_cast<char>(copy[0] - 'a' + 'A');
    return copy;
}

// What the counters (pg/base/stats.hpp) file this firing under.
WriteStatsTarget StatsTarget(const GuardContext &g) {
    return {g.trigger->tg_trigger->tgoid, g.policy.home_relid,
            g.policy.scope == Scope::kResource ? g.name_space : nullptr};
}

// Whether Stale() would skip a stale row rather than raise.
bool StaleRowsMayBeSkipped(const GuardContext &g) {
    return !InNoForceRLSOperation() &&
           (g.policy.on_stale == OnStale::kSkip || FencedCallSkipsStaleRows(g.policy.home_relid));
}

// Raises the dedicated SQLSTATE, or returns when the stale row is to be skipped.
// Either way the write is counted and logged first, so a rejection that rolls
// its transaction back is still counted.
// floor_of: the key has no entry of its own and was judged against the floor
// of this namespace or table (retirement), said after the usual sentence.
void Stale(const GuardContext &g, const char *where, Token offered, Token hwm, bool may_skip = true,
           const char *floor_of = nullptr) {
    // Skipped under on_stale => 'skip', and inside the fenced call scope
    // (pg/guard/fenced_call.hpp) for the call's table: the call reports 0
    // rows. A foreign key's cascade is never skipped: skipping it would leave
    // the constraint violated (RI actions run with SECURITY_NOFORCE_RLS set).
    if (may_skip && StaleRowsMayBeSkipped(g)) {
        if (FencedCallSkipsStaleRows(g.policy.home_relid))
            NoteFencedCallStale(hwm);
        CountStale(StatsTarget(g), true, where, offered, hwm);
        return;
    }
    CountStale(StatsTarget(g), false, where, offered, hwm);
    const char *floor_note =
        floor_of == nullptr
            ? ""
            : psprintf(
                  " The key has no entry of its own and was judged against the floor of %s "
                  "(its entry retired, or never written).",
                  floor_of);
    // As for a unique violation: the table in the message, the key in DETAIL.
    ereport(ERROR, (errcode(ERRCODE_FENCING_STALE_TOKEN),
                    errmsg("stale fencing token for table %s", HomeName(g)),
                    g.policy.strict
                        ? errdetail("%s: offered token " INT64_FORMAT
                                    " is not above the high-water mark " INT64_FORMAT
                                    " (strict: a token is admitted to one transaction only).%s",
                                    Capitalized(where), offered, hwm, floor_note)
                        : errdetail("%s: offered token " INT64_FORMAT
                                    " is below the high-water mark " INT64_FORMAT ".%s",
                                    Capitalized(where), offered, hwm, floor_note),
                    errhint(FENCING_STALE_HINT), HomeTable(g)));
}

HeapTuple WithToken(const GuardContext &g, Token token) {
    int attnum = g.policy.token_attnum;
    Datum value = Int64GetDatum(token);
    bool isnull = false;
    return heap_modify_tuple_by_cols(g.new_row, RelationGetDescr(g.rel), 1, &attnum, &value,
                                     &isnull);
}

// Resource scope: the resource column's value, as text (from the slot
// holding the row when there is one).
const char *ResourceOf(const GuardContext &g, HeapTuple row, TupleTableSlot *slot) {
    TupleDesc desc = RelationGetDescr(g.rel);
    int attnum = g.policy.resource_attnum;
    bool isnull;
    Datum d = ColumnOf(row, slot, desc, attnum, &isnull);
    if (isnull)
        ereport(ERROR, (errcode(ERRCODE_NOT_NULL_VIOLATION),
                        errmsg("cannot fence a row of table %s: its resource column %s is NULL",
                               HomeName(g), ColumnForCaller(g, attnum, "(not shown)")),
                        HomeTable(g)));
    return ResourceKeyText(TupleDescAttr(desc, attnum - 1)->atttypid, d);
}

// Replay-safe retries (strict mode): a client whose COMMIT timed out retries
// with the same token; if its write landed, the HWM now equals that token,
// raised by another transaction. The retry is admitted as a no-op success
// when it changes nothing:
//   * it is an UPDATE (an INSERT has no stored row to compare, a DELETE of an
//     existing row is never a no-op, a tombstone has no payload);
//   * every column but dropped and generated ones is byte-identical
//     (datum_image_eq, which detoasts) to the stored row's, the token column
//     as the offered token;
//   * in row scope, the table has a primary key: without one, the registry
//     knows a row by the version this transaction wrote, which the replay is.
// A replay raises and records nothing, so a later different write with the
// token is still refused. It waits for its WAL as a raise does: its success
// confirms a write whose commit may never have been acknowledged.
bool SamePayload(const GuardContext &g, Token offered) {
    TupleDesc desc = RelationGetDescr(g.rel);
    for (int attnum = 1; attnum <= desc->natts; ++attnum) {
        Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
        if (att->attisdropped || att->attgenerated != '\0')
            continue;
        bool old_null, new_null = false;
        Datum o = heap_getattr(g.old_row, attnum, desc, &old_null);
        Datum n = attnum == g.policy.token_attnum
                      ? Int64GetDatum(offered)
                      : heap_getattr(g.new_row, attnum, desc, &new_null);
        if (old_null != new_null ||
            (!old_null && !datum_image_eq(o, n, att->attbyval, att->attlen)))
            return false;
    }
    return true;
}

bool AdmitsReplay(const GuardContext &g, Token offered, Token hwm) {
    if (!g.policy.strict || offered != hwm || g.event != RowEvent::kUpdate)
        return false;
    if (g.policy.scope == Scope::kRow && PrimaryKeyColumns(g.rel) == nullptr)
        return false;
    if (!SamePayload(g, offered))
        return false;
    NoteHwmRaised();  // durability only: the registry records nothing
    return true;
}

// Resource and table scope: one atomic check-and-raise on the HWM table.
bool SharedHwmAdmits(const GuardContext &g, Token offered, const char *resource) {
    HwmVerdict verdict =
        g.policy.scope == Scope::kResource
            ? CheckAndRaiseResource(g.name_space, resource, offered, g.policy.strict)
            : CheckAndRaiseTable(g.policy.home_relid, offered, g.policy.strict);
    if (verdict.admitted || AdmitsReplay(g, offered, verdict.hwm))
        return true;
    StringInfoData where;
    initStringInfo(&where);
    AttrNumber resource_attnum = static_cast<AttrNumber>(g.policy.resource_attnum);
    if (g.policy.scope == Scope::kResource)
        appendStringInfo(&where, "resource %s (namespace %s)",
                         CallerMaySeeColumns(g.rel, g.policy.home_relid, &resource_attnum, 1)
                             ? quote_literal_cstr(resource)
                             : "(not shown)",
                         quote_literal_cstr(g.name_space));
    else
        appendStringInfoString(&where, "table-wide");
    const char *floor_of =
        verdict.floor ? psprintf("namespace %s", quote_literal_cstr(g.name_space)) : nullptr;
    Stale(g, where.data, offered, verdict.hwm, true, floor_of);
    return false;
}

// The last decoded policy, keyed by trigger OID and its exact text: rows of one
// statement hit it, and a changed policy means a new trigger anyway.
struct PolicyCache {
    Oid tgoid = InvalidOid;
    char text[kPolicyTextCapacity] = {};
    Policy policy;
};
PolicyCache policy_cache;

bool CachedPolicy(const Trigger *trigger, Policy *out) {
    const char *text = trigger->tgargs[0];
    if (trigger->tgoid != policy_cache.tgoid || strcmp(text, policy_cache.text) != 0) {
        if (strlen(text) >= kPolicyTextCapacity || !DecodePolicy(text, &policy_cache.policy)) {
            policy_cache.tgoid = InvalidOid;
            return false;
        }
        strcpy(policy_cache.text, text);
        policy_cache.tgoid = trigger->tgoid;
    }
    *out = policy_cache.policy;
    return true;
}

// Row scope's side of the raise registry (pg/hwm/raise_registry.hpp): a row's
// HWM, or its key's tombstone, is identified by the canonical primary key. A
// table without a primary key has one identity for all its rows, and an equal
// token is then admitted only on a row version this transaction wrote.
bool RowRaisedHere(const GuardContext &g, HwmKind kind, HeapTuple row, Token token) {
    Datum key;
    if (!RowKeyOf(g.rel, row, &key))
        return kind == HwmKind::kRow &&
               TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(row->t_data)) &&
               RaisedHere(kind, g.policy.home_relid, nullptr, 0, token);
    auto *bytes = reinterpret_cast<varlena *>(DatumGetPointer(key));
    return RaisedHere(kind, g.policy.home_relid, VARDATA_ANY(bytes), VARSIZE_ANY_EXHDR(bytes),
                      token);
}

// Strict mode's one rule: above the HWM, or equal to it and raised to it by
// this very transaction.
bool RowAdmits(const GuardContext &g, HwmKind kind, HeapTuple row, Token offered, Token hwm) {
    switch (JudgeOffer(offered, hwm, g.policy.strict)) {
        case Admission::kAdmitted:
            return true;
        case Admission::kIfRaisedHere:
            return RowRaisedHere(g, kind, row, offered);
        case Admission::kRefused:
            break;
    }
    return false;
}

void NoteRowRaise(const GuardContext &g, HwmKind kind, HeapTuple row, Token token) {
    if (!g.policy.strict)
        return;
    Datum key;
    if (!RowKeyOf(g.rel, row, &key)) {
        RecordRaise(kind, g.policy.home_relid, nullptr, 0, token);
        return;
    }
    auto *bytes = reinterpret_cast<varlena *>(DatumGetPointer(key));
    RecordRaise(kind, g.policy.home_relid, VARDATA_ANY(bytes), VARSIZE_ANY_EXHDR(bytes), token);
}

// Bringing back a deleted key needs a token: a row without one would carry no
// HWM and let any later token in.
// The table whose floor judged a key (the DETAIL's wording).
const char *TableFloorName(const GuardContext &g) {
    return psprintf("table %s", HomeName(g));
}

// floor: the key has no tombstone of its own, and the table's floor stands in
// for the tombstones retired into it (any key may be one of them).
[[noreturn]] void RequireTokenForDeletedKey(const GuardContext &g, Token tombstone,
                                            bool floor = false) {
    CountWrite(StatsTarget(g), WriteOutcome::kMissingToken, 0);
    ereport(ERROR,
            (errcode(ERRCODE_FENCING_TOKEN_REQUIRED),
             errmsg("writing a deleted key of table %s requires a fencing token", HomeName(g)),
             floor ? errdetail(
                         "%s may have been deleted: tombstones up to high-water mark " INT64_FORMAT
                         " were retired into the floor of table %s.",
                         RowKeyDescription(g.rel, g.policy.home_relid, g.new_row), tombstone,
                         HomeName(g))
                   : errdetail("%s was deleted with high-water mark " INT64_FORMAT ".",
                               RowKeyDescription(g.rel, g.policy.home_relid, g.new_row), tombstone),
             errhint("SET LOCAL fencing.token, or write the token column."), HomeTable(g)));
    pg_unreachable();
}

// Whether two versions of a row differ in a primary key column (binary
// comparison, as the executor's own key-change test).
bool KeyColumnsDiffer(Relation rel, const Bitmapset *pk, HeapTuple old_row, HeapTuple new_row) {
    TupleDesc desc = RelationGetDescr(rel);
    int member = -1;
    while ((member = bms_next_member(pk, member)) >= 0) {
        int attnum = member + FirstLowInvalidHeapAttributeNumber;
        Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
        bool old_null, new_null;
        Datum o = heap_getattr(old_row, attnum, desc, &old_null);
        Datum n = heap_getattr(new_row, attnum, desc, &new_null);
        if (old_null != new_null || (!old_null && !datumIsEqual(o, n, att->attbyval, att->attlen)))
            return true;
    }
    return false;
}

// Whether a BEFORE UPDATE row trigger other than the guard may have changed
// the new row: the SET list then no longer says which columns changed (no
// trigger may sort after the guard, so any other one ran before it).
bool OtherBeforeUpdateTriggers(const GuardContext &g) {
    const TriggerDesc *desc = g.rel->trigdesc;
    for (int i = 0; desc != nullptr && i < desc->numtriggers; ++i) {
        const Trigger *t = &desc->triggers[i];
        if (t->tgoid != g.trigger->tg_trigger->tgoid &&
            TRIGGER_TYPE_MATCHES(t->tgtype, TRIGGER_TYPE_ROW, TRIGGER_TYPE_BEFORE,
                                 TRIGGER_TYPE_UPDATE))
            return true;
    }
    return false;
}

// Whether an UPDATE writes a different primary key. Only rows whose SET list
// names a key column (or whose table has other BEFORE UPDATE triggers) pay for
// the comparison. A key changed by a trigger while the SET list names no key
// column is refused: the move recheck (AFTER UPDATE OF the key columns) would
// not fire for it.
bool ChangesPrimaryKey(const GuardContext &g) {
    const Bitmapset *pk = PrimaryKeyColumns(g.rel);
    if (pk == nullptr)
        return false;
    bool named = bms_overlap(pk, g.trigger->tg_updatedcols);
    if ((!named && !OtherBeforeUpdateTriggers(g)) ||
        !KeyColumnsDiffer(g.rel, pk, g.old_row, g.new_row))
        return false;
    if (!named)
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("a trigger changed the primary key of a row of table %s", HomeName(g)),
                 errdetail("The UPDATE names no primary key column, so the key change cannot "
                           "be fenced."),
                 errhint("Name the primary key columns in the UPDATE's SET list."), HomeTable(g)));
    return true;
}

// How a trigger function may be fired: row level, the given timing, one of
// the given events, with the two arguments InstallGuard writes. Anything else
// (a superuser attaching the function by hand, FOR EACH STATEMENT, to other
// events) is refused before a tuple pointer is touched.
enum FiringEvents : unsigned { kOnInsert = 1, kOnUpdate = 2, kOnDelete = 4 };

TriggerData *FiredAs(FunctionCallInfo fcinfo, const char *function, bool before, unsigned events,
                     const char *expected) {
    TriggerData *td = TriggerCallData(fcinfo, function);
    TriggerEvent e = td->tg_event;
    bool timing = before ? TRIGGER_FIRED_BEFORE(e) : TRIGGER_FIRED_AFTER(e);
    bool event = (TRIGGER_FIRED_BY_INSERT(e) && (events & kOnInsert) != 0) ||
                 (TRIGGER_FIRED_BY_UPDATE(e) && (events & kOnUpdate) != 0) ||
                 (TRIGGER_FIRED_BY_DELETE(e) && (events & kOnDelete) != 0);
    if (!TRIGGER_FIRED_FOR_ROW(e) || !timing || !event)
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("%s must be fired as %s", function, expected)));
    // A third argument marks a table restored without its fencing state.
    if (td->tg_trigger->tgnargs != 2 && td->tg_trigger->tgnargs != 3)
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("%s takes 2 or 3 trigger arguments, not %d", function,
                               td->tg_trigger->tgnargs)));
    return td;
}

// The policy's token column must still be there, and still a by-value int64
// (fencing_token or bigint): a column whose type was since changed is refused
// rather than misread.
void RequireTokenColumn(Relation rel, int attnum) {
    TupleDesc desc = RelationGetDescr(rel);
    if (attnum > desc->natts || TupleDescAttr(desc, attnum - 1)->attisdropped)
        BadGuard(rel, "its token column is gone");
    if (!IsTokenColumnType(TupleDescAttr(desc, attnum - 1)->atttypid))
        BadGuard(rel, "its token column is no longer fencing_token or bigint");
}

// The token a write to home_relid carries from outside the statement. Inside
// the fenced call scope (pg/guard/fenced_call.hpp) every write to the call's
// table, a trigger's included, carries the call's token; otherwise
// fencing.token does, when this transaction set it (a session value is a
// stray: pg/base/guc.hpp).
CarriedSetting CarriedToken(Oid home_relid, Token *out) {
    if (FencedCallToken(home_relid, out))
        return CarriedSetting::kTransaction;
    return TokenSetting(out);
}

// The facts the offer rule (core/offer_rule.hpp) decides on.
OfferFacts GatherOfferFacts(const GuardContext &g, bool session_set) {
    int attnum = g.policy.token_attnum;
    OfferFacts f;
    f.event = g.event;
    f.session_token = session_set;
    f.column_value = g.has_new_token;
    f.column_default = TupleDescAttr(RelationGetDescr(g.rel), attnum - 1)->atthasdef;
    f.same_as_old = g.has_old_token && g.has_new_token && g.new_token == g.old_token;
    f.named_in_set =
        g.event == RowEvent::kUpdate &&
        bms_is_member(attnum - FirstLowInvalidHeapAttributeNumber, g.trigger->tg_updatedcols);
    return f;
}

[[noreturn]] void RefuseConflictingTokens(const GuardContext &g, Token session_token) {
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
             errmsg("conflicting fencing tokens for table %s", HomeName(g)),
             errdetail("The statement writes token " INT64_FORMAT
                       " into token column %s but fencing.token is " INT64_FORMAT ".",
                       g.new_token, ColumnForCaller(g, g.policy.token_attnum, "(not shown)"),
                       session_token),
             g.event == RowEvent::kUpdate
                 ? errhint("Under fencing.token an UPDATE may write only fencing.token or the "
                           "row's current token (an echo, which carries fencing.token) into "
                           "the token column; re-read the row if it changed.")
                 : 0,
             HomeTable(g)));
    pg_unreachable();
}

// A write that offers no token: refused where the policy requires one (unless
// fencing_allow_unfenced() admits it), and it may not clear the token column.
void RequireTokenlessWriteAllowed(const GuardContext &g) {
    if (g.policy.require_token && !UnfencedWritesAllowed(g.rel, g.policy.home_relid)) {
        CountWrite(StatsTarget(g), WriteOutcome::kMissingToken, 0);
        ereport(ERROR, (errcode(ERRCODE_FENCING_TOKEN_REQUIRED),
                        errmsg("table %s requires a fencing token", HomeName(g)),
                        errdetail("Neither fencing.token is set nor does the statement write the "
                                  "token column %s.",
                                  ColumnForCaller(g, g.policy.token_attnum, "(not shown)")),
                        errhint("SET LOCAL fencing.token inside BEGIN ... COMMIT, or use "
                                "fenced_update(); the table's owner can allow unfenced writes for "
                                "one transaction with fencing_allow_unfenced()."),
                        HomeTable(g)));
    }
    if (g.event == RowEvent::kUpdate && g.has_old_token && !g.has_new_token)
        ereport(ERROR, (errcode(ERRCODE_NOT_NULL_VIOLATION),
                        errmsg("cannot clear the fencing token of a row of table %s", HomeName(g)),
                        HomeTable(g)));
}

// Which token the write offers, and where from: the token column, when the
// offer rule says the statement wrote it, or the carried token. Raises for
// conflicting tokens, a required token that is missing, a negative one, and a
// write that would clear the token column.
OfferedToken ResolveOffer(const GuardContext &g) {
    Token session_token;
    CarriedSetting carried = CarriedToken(g.policy.home_relid, &session_token);
    // A stray session token takes no part: the write is judged by its own
    // token, as if none were set, and refused only when it has none.
    bool session_set = carried == CarriedSetting::kTransaction;
    bool column_offers = ColumnOffersToken(GatherOfferFacts(g, session_set));
    if (column_offers && g.new_token < 0)
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("fencing token " INT64_FORMAT " out of range", g.new_token),
                        errdetail("A fencing token cannot be negative."), HomeTable(g)));
    OfferedToken offered;
    if (!ResolveOfferedToken(column_offers, g.new_token, session_set, session_token, &offered))
        RefuseConflictingTokens(g, session_token);
    if (offered.source == TokenSource::kNone && carried == CarriedSetting::kStraySession)
        RefuseStraySessionToken();
    if (offered.source == TokenSource::kNone)
        RequireTokenlessWriteAllowed(g);
    return offered;
}

// Whether fencing.recheck() fires after this INSERT: an enabled AFTER INSERT
// row trigger of the relation that calls it (installed with every row-scope
// guard; a guard attached by hand may lack it).
bool RecheckFollows(const GuardContext &g) {
    static Oid recheck_fn = InvalidOid;
    if (!OidIsValid(recheck_fn))
        recheck_fn = FencingFunctionOid("recheck");
    const TriggerDesc *desc = g.rel->trigdesc;
    bool replica = SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA;
    for (int i = 0; desc != nullptr && i < desc->numtriggers; ++i) {
        const Trigger *t = &desc->triggers[i];
        if (t->tgfoid == recheck_fn && t->tgenabled != TRIGGER_DISABLED &&
            (replica ? t->tgenabled != TRIGGER_FIRES_ON_ORIGIN
                     : t->tgenabled != TRIGGER_FIRES_ON_REPLICA) &&
            TRIGGER_TYPE_MATCHES(t->tgtype, TRIGGER_TYPE_ROW, TRIGGER_TYPE_AFTER,
                                 TRIGGER_TYPE_INSERT))
            return true;
    }
    return false;
}

// Row scope: the row's own token is its HWM, and a deleted key's tombstone
// holds it after the row is gone. False when the row is to be skipped.
bool CheckRow(const GuardContext &g, const OfferedToken &offered) {
    bool fenced = offered.source != TokenSource::kNone;
    // An UPDATE that changes the primary key leaves the old key (like a
    // DELETE) and takes the new one (like an INSERT).
    bool moves_key = g.event == RowEvent::kUpdate && ChangesPrimaryKey(g);
    if (fenced && g.event != RowEvent::kInsert && g.has_old_token &&
        !RowAdmits(g, HwmKind::kRow, g.old_row, offered.value, g.old_token)) {
        if (AdmitsReplay(g, offered.value, g.old_token))
            return true;
        Stale(g, RowKeyDescription(g.rel, g.policy.home_relid, g.old_row), offered.value,
              g.old_token);
        return false;
    }
    if (moves_key)
        WaitForKeyWriters(g.rel, g.new_row);
    if (g.event == RowEvent::kInsert && !(fenced && StaleRowsMayBeSkipped(g)) &&
        RecheckFollows(g)) {
        // The AFTER INSERT recheck reads the key's tombstone once the row is
        // in the primary key index, and judges it; a stale row it refuses
        // could only have been skipped here, which this policy does not do.
        // One read per row instead of two (COPY, INSERT ... SELECT).
        RequireRowKeyFits(g.rel, g.policy.home_relid, g.new_row);
    } else if (g.event == RowEvent::kInsert || moves_key) {
        Token tombstone;
        bool floor;
        if (RowTombstone(g.rel, g.policy.home_relid, g.new_row, &tombstone, &floor)) {
            // A token-less INSERT onto a deleted key is judged by the AFTER
            // recheck, once it is known that a row is really written (it may
            // still end in ON CONFLICT). A token-less move carries the row's
            // own token, judged here.
            bool judged = fenced || (moves_key && g.has_new_token);
            Token token = fenced ? offered.value : g.new_token;
            if (moves_key && !judged)
                RequireTokenForDeletedKey(g, tombstone, floor);
            if (judged && !RowAdmits(g, HwmKind::kTombstone, g.new_row, token, tombstone)) {
                Stale(g, RowKeyDescription(g.rel, g.policy.home_relid, g.new_row), token, tombstone,
                      true, floor ? TableFloorName(g) : nullptr);
                return false;
            }
        }
    }
    if ((g.event == RowEvent::kDelete || moves_key) && (g.has_old_token || fenced)) {
        Token left = g.has_old_token ? g.old_token : offered.value;
        if (fenced && offered.value > left)
            left = offered.value;
        LeaveTombstone(g.rel, g.policy.home_relid, g.old_row, left, g.event == RowEvent::kDelete);
        // An admitted fenced write raised the key's tombstone to left; an
        // unfenced one only preserved someone else's HWM.
        if (fenced)
            NoteRowRaise(g, HwmKind::kTombstone, g.old_row, left);
    }
    if (fenced && g.event != RowEvent::kDelete) {
        // An INSERT may still become nothing, or ON CONFLICT's UPDATE of
        // another transaction's row: its raise is recorded by the AFTER INSERT
        // recheck, once the row is really written.
        if (g.event == RowEvent::kUpdate)
            NoteRowRaise(g, HwmKind::kRow, g.new_row, offered.value);
        if (!g.has_old_token || offered.value > g.old_token)
            NoteHwmRaised();  // the row's token rises (tombstones: RaiseTombstone)
    }
    return true;
}

// Resource and table scope: one atomic check-and-raise of the shared HWM
// (pg/hwm/store.hpp). False when the row is to be skipped.
bool CheckShared(const GuardContext &g, const OfferedToken &offered) {
    if (offered.source == TokenSource::kNone)
        return true;
    if (g.policy.scope == Scope::kTable)
        return SharedHwmAdmits(g, offered.value, nullptr);
    const char *resource = g.new_row != nullptr ? ResourceOf(g, g.new_row, g.new_slot)
                                                : ResourceOf(g, g.old_row, g.old_slot);
    // A row moved to another resource is a write to both.
    // A BEFORE trigger may move it without the SET list naming the column.
    if (g.event == RowEvent::kUpdate &&
        (bms_is_member(g.policy.resource_attnum - FirstLowInvalidHeapAttributeNumber,
                       g.trigger->tg_updatedcols) ||
         OtherBeforeUpdateTriggers(g))) {
        const char *old_resource = ResourceOf(g, g.old_row, g.old_slot);
        if (strcmp(old_resource, resource) != 0 && !SharedHwmAdmits(g, offered.value, old_resource))
            return false;
    }
    return SharedHwmAdmits(g, offered.value, resource);
}

// What a guard or recheck firing is about: the policy from the trigger's
// arguments (validated), the event, the rows and their tokens.
void ReadFiring(TriggerData *td, GuardContext *g) {
    g->trigger = td;
    g->rel = td->tg_relation;
    if (!CachedPolicy(td->tg_trigger, &g->policy))
        BadGuard(g->rel, "unreadable policy");
    g->name_space = td->tg_trigger->tgargs[1];
    RequireTokenColumn(g->rel, g->policy.token_attnum);
    if (g->policy.scope == Scope::kResource) {
        TupleDesc desc = RelationGetDescr(g->rel);
        int attnum = g->policy.resource_attnum;
        if (attnum < 1 || attnum > desc->natts || TupleDescAttr(desc, attnum - 1)->attisdropped)
            BadGuard(g->rel, "its resource column is gone");
    }
    if (TRIGGER_FIRED_BY_INSERT(td->tg_event)) {
        g->event = RowEvent::kInsert;
        g->old_row = nullptr;
        g->new_row = td->tg_trigtuple;
    } else if (TRIGGER_FIRED_BY_UPDATE(td->tg_event)) {
        g->event = RowEvent::kUpdate;
        g->old_row = td->tg_trigtuple;
        g->new_row = td->tg_newtuple;
    } else {
        g->event = RowEvent::kDelete;
        g->old_row = td->tg_trigtuple;
        g->new_row = nullptr;
    }
    TupleDesc desc = RelationGetDescr(g->rel);
    g->old_token = g->new_token = 0;
    // An INSERT's row is in tg_trigslot, an UPDATE's old and new rows in
    // tg_trigslot and tg_newslot, a DELETE's old row in tg_trigslot.
    g->old_slot = g->event == RowEvent::kInsert ? nullptr : td->tg_trigslot;
    g->new_slot = g->event == RowEvent::kInsert
                      ? td->tg_trigslot
                      : (g->event == RowEvent::kUpdate ? td->tg_newslot : nullptr);
    g->has_old_token =
        TokenOf(g->old_slot, g->old_row, desc, g->policy.token_attnum, &g->old_token);
    g->has_new_token =
        TokenOf(g->new_slot, g->new_row, desc, g->policy.token_attnum, &g->new_token);
}

// After the write: the key's tombstone once more, read with the latest
// snapshot, now that the write has waited on the primary key index for any
// transaction that held the key. A DELETE of the key that committed meanwhile
// is visible. The row's token is in its token column (the guard filled it in
// from fencing.token). It is too late to skip the row, so a stale one raises
// even under on_stale => 'skip'.
void RecheckWrittenRow(const GuardContext &g) {
    Token tombstone;
    bool floor;
    // A tombstone still being written (a DELETE or fencing_advance() in
    // flight) is waited for: its commit decides. A statement's rows after its
    // first, while the table has no tombstone at all: the floor alone.
    bool none_stored = g.event == RowEvent::kInsert &&
                       StatementStoresNoTombstone(g.trigger, g.policy.home_relid);
    if (none_stored ? !(OidIsValid(PrimaryKeyIndex(g.rel)) &&
                        UnstoredKeyFloor(g.policy.home_relid, &tombstone, &floor))
                    : !RowTombstoneAfterWriters(g.rel, g.policy.home_relid, g.new_row, &tombstone,
                                                &floor))
        return;
    Token token;
    bool has_token = TokenAt(g.new_row, RelationGetDescr(g.rel), g.policy.token_attnum, &token);
    bool admitted = has_token && RowAdmits(g, HwmKind::kTombstone, g.new_row, token, tombstone);
    // The guard counted this write as admitted; it is refused after all.
    if (!admitted)
        UncountWrite(StatsTarget(g), has_token ? WriteOutcome::kAccepted : WriteOutcome::kUnfenced);
    if (!has_token)
        RequireTokenForDeletedKey(g, tombstone, floor);
    if (!admitted)
        Stale(g, RowKeyDescription(g.rel, g.policy.home_relid, g.new_row), token, tombstone, false,
              floor ? TableFloorName(g) : nullptr);
}

}  // namespace
}  // namespace fencing::pg

using namespace fencing;
using namespace fencing::pg;

// The BEFORE ROW check of every write to a guarded relation.
FENCING_FUNCTION(fencing_guard) {
    TriggerData *td = FiredAs(fcinfo, "fencing.guard()", true, kOnInsert | kOnUpdate | kOnDelete,
                              "a BEFORE ROW trigger on INSERT, UPDATE or DELETE");
    if (td->tg_trigger->tgnargs == 3)
        RefuseRestoredWrite(td->tg_relation, td->tg_trigger->tgargs[2]);
    NoteGuardFiring();
    GuardContext g;
    ReadFiring(td, &g);
    // Before anything is written (a shared HWM raised, a tombstone left).
    RefuseWriteOnSubscriber(g.rel, g.policy.home_relid);
    // A shared HWM kept per shard and per node fences nothing across them.
    if (g.policy.scope != Scope::kRow)
        RefuseOnCitus(CitusAction::kWrite, RelationGetRelid(g.rel), g.policy.scope);
    OfferedToken offered = ResolveOffer(g);
    bool admitted = g.policy.scope == Scope::kRow ? CheckRow(g, offered) : CheckShared(g, offered);
    if (!admitted)
        return NullPointerDatum();  // skipped (counted by Stale)
    CountWrite(
        StatsTarget(g),
        offered.source == TokenSource::kNone ? WriteOutcome::kUnfenced : WriteOutcome::kAccepted,
        offered.value);
    if (g.event == RowEvent::kDelete)
        return PointerGetDatum(g.old_row);
    if (offered.source == TokenSource::kSession &&
        (!g.has_new_token || g.new_token != offered.value))
        return PointerGetDatum(WithToken(g, offered.value));
    return PointerGetDatum(g.new_row);
}

// AFTER INSERT (row scope): an INSERT that raced a DELETE of its key.
//
// AFTER UPDATE OF <primary key columns> (row scope, zz_fencing_move_recheck):
// an UPDATE that moved a row onto a key that a newer holder deleted between
// the guard's check and the index insertion. UPDATEs that do not name a key
// column queue no event; of those that do, only rows whose key changed read
// the tombstone.
FENCING_FUNCTION(fencing_recheck) {
    TriggerData *td = FiredAs(fcinfo, "fencing.recheck()", false, kOnInsert | kOnUpdate,
                              "an AFTER ROW trigger on INSERT or UPDATE");
    GuardContext g;
    ReadFiring(td, &g);
    if (g.event == RowEvent::kUpdate) {
        const Bitmapset *pk = PrimaryKeyColumns(g.rel);
        if (pk == nullptr || !KeyColumnsDiffer(g.rel, pk, g.old_row, g.new_row))
            return NullPointerDatum();
    }
    RecheckWrittenRow(g);
    // The row is written: its token is now the key's HWM, raised by this
    // transaction (strict mode's registry; the guard could not know yet).
    if (g.event == RowEvent::kInsert && g.has_new_token)
        NoteRowRaise(g, HwmKind::kRow, g.new_row, g.new_token);
    return NullPointerDatum();
}
