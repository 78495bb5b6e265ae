// GUCs: fencing.token (transparent mode), fencing.allow_session_token and
// fencing.auto_protect; the hooks that refuse a SET LOCAL of fencing.token
// that ends its own implicit transaction (the token would be lost).
#include <cstdlib>

#include "pg/base/guc.hpp"

#include "pg/base/errors.hpp"
#include "pg/base/pg.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/xact.h"
#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
}

namespace fencing::pg {

namespace {

char *token_setting = nullptr;
bool auto_protect_setting = true;
int retire_batch_size_setting = 1000;
bool allow_session_token_setting = false;
// fencing.token's own GUC record: its stack tells whether the current
// transaction set the value (see SetInThisTransaction).
config_generic *token_record = nullptr;
ProcessUtility_hook_type previous_utility_hook = nullptr;
bool session_token_set = false;
bool session_token_valid = true;
Token session_token_value = 0;

// True while _PG_init defines the variables.
bool defining = false;

struct ParsedToken {
    bool valid;
    Token value;
};

// The parsed token travels from check to assign hook in GUC "extra" memory,
// which guc.c frees with free(): it must come from malloc.
//
// A value SET before this library was loaded lives in a placeholder and is
// re-applied while _PG_init defines the variable; a rejection then would only
// be a WARNING and leave the token unset, so an unfenced write could follow.
// Such a value is accepted but marked invalid, and every write that consults
// it fails (fail closed).
bool CheckToken(char **newval, void **extra, GucSource) {
    if (*newval == nullptr || **newval == '\0')
        return true;
    ParseResult parsed = ParseToken(*newval);
    if (parsed.status != ParseStatus::kOk && !defining) {
        GUC_check_errcode(parsed.status == ParseStatus::kOutOfRange
                              ? ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE
                              : ERRCODE_INVALID_TEXT_REPRESENTATION);
        GUC_check_errdetail(
            "fencing.token must be a fencing token: a decimal integer from 0 "
            "to 9223372036854775807 or 0x hex, or empty for none.");
        return false;
    }
    auto *value = static_cast<ParsedToken *>(AllocateGucExtra(sizeof(ParsedToken)));
    if (value == nullptr)
        return false;
    value->valid = parsed.status == ParseStatus::kOk;
    value->value = parsed.value;
    *extra = value;
    return true;
}

void AssignToken(const char *, void *extra) {
    auto *parsed = static_cast<ParsedToken *>(extra);
    session_token_set = parsed != nullptr;
    session_token_valid = parsed == nullptr || parsed->valid;
    session_token_value = parsed != nullptr ? parsed->value : 0;
}

// Whether the current value of fencing.token was set inside the current
// transaction. PostgreSQL keeps a stack entry for every variable changed
// inside the transaction (SET, SET LOCAL, set_config(), a function's SET
// clause) and pops it when the transaction or the function ends. A value with
// no entry was set for the session: by a SET in an earlier transaction, ALTER
// ROLE or DATABASE ... SET, postgresql.conf or a connection option. (A value
// SET before the library was loaded is re-applied by
// DefineCustomStringVariable, which drops the stack entry that makes for a
// value of an earlier transaction and keeps those of the current one.) The
// value must also come from a SET of this transaction: a RESET, or SET ... TO
// DEFAULT, inside it pushes an entry too but brings back the session's value
// (ALTER ROLE ... SET, postgresql.conf), with that value's source.
bool SetInThisTransaction() {
    // Without the record nothing can be told apart: refuse (fail closed).
    return token_record != nullptr && token_record->stack != nullptr &&
           token_record->source == PGC_S_SESSION;
}

// SET LOCAL outside a transaction block is only a WARNING in PostgreSQL; the
// value holds until the implicit transaction it runs in ends. In a single
// statement's transaction that is the end of the SET LOCAL itself: the token
// is lost, and the next statement would write without it. In a pipeline or
// a batch (the extended protocol's messages up to a Sync) or a multi-statement
// query string, later statements of the same implicit transaction carry it,
// as they do on a connection where the library is not loaded yet.
//
// So the SET LOCAL is accepted, and the implicit transaction is refused at
// its commit (25P01) when that SET LOCAL was its last statement: only then
// was the token lost. Which statement comes last is known only at the end
// (the server cannot see whether a Sync follows the Execute).
//
// lost_set_local_lxid: the transaction whose last statement so far is such a
// SET LOCAL (InvalidLocalTransactionId: none). Every later top-level
// statement but a COMMIT clears it.
LocalTransactionId lost_set_local_lxid = InvalidLocalTransactionId;
ExecutorStart_hook_type previous_executor_start_hook = nullptr;

// A multi-statement query string runs in an implicit transaction block, which
// IsTransactionBlock() does not tell from one the client opened. So the
// client's blocks are noted: explicit_block_lxid is the transaction a BEGIN
// or START TRANSACTION opened (a BEGIN inside a query string turns its
// implicit block into this one), and chained_from_lxid the one a COMMIT or
// ROLLBACK AND CHAIN ended, whose successor is an explicit block too.
LocalTransactionId explicit_block_lxid = InvalidLocalTransactionId;
LocalTransactionId chained_from_lxid = InvalidLocalTransactionId;

// Where the AND CHAIN noted in chained_from_lxid stands: its transaction has
// still to end (kEnding), or has ended and its successor is the one running
// (kStarted). A COMMIT AND CHAIN whose commit fails (a deferred constraint)
// starts no successor, and the successor's own end ends the chain: else the
// next transaction, however it began, would be taken as the client's block.
enum class Chain { kNone, kEnding, kStarted };
Chain chain = Chain::kNone;
bool chain_needs_commit = false;

bool InImplicitBlock() {
    LocalTransactionId current = CurrentLocalTransactionId();
    if (chain == Chain::kStarted && chained_from_lxid != current) {
        explicit_block_lxid = current;
        chain = Chain::kNone;
        chained_from_lxid = InvalidLocalTransactionId;
    }
    return IsTransactionBlock() && explicit_block_lxid != current;
}

void TrackChain(XactEvent event) {
    bool ended =
        event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE;
    if (!ended || chain == Chain::kNone)
        return;
    if (chain == Chain::kEnding && !(chain_needs_commit && event == XACT_EVENT_ABORT)) {
        chain = Chain::kStarted;
        return;
    }
    chain = Chain::kNone;
    chained_from_lxid = InvalidLocalTransactionId;
}

// aborted, sub: the block's state before the statement ran.
void NoteExplicitBlock(Node *stmt, bool aborted, bool sub) {
    if (!IsA(stmt, TransactionStmt))
        return;
    auto *txn = reinterpret_cast<TransactionStmt *>(stmt);
    if (txn->kind == TRANS_STMT_BEGIN || txn->kind == TRANS_STMT_START)
        explicit_block_lxid = CurrentLocalTransactionId();
    else if ((txn->kind == TRANS_STMT_COMMIT || txn->kind == TRANS_STMT_ROLLBACK) && txn->chain) {
        chained_from_lxid = CurrentLocalTransactionId();
        // In an aborted block the abort has run already, and taken the
        // block's local transaction id with it (in an aborted subtransaction
        // it is still to come); otherwise a COMMIT chains only if its commit
        // succeeds.
        chain = aborted && !sub ? Chain::kStarted : Chain::kEnding;
        chain_needs_commit = txn->kind == TRANS_STMT_COMMIT && !aborted;
    }
}

bool IsSetLocalOfToken(Node *stmt) {
    if (!IsA(stmt, VariableSetStmt))
        return false;
    auto *set = reinterpret_cast<VariableSetStmt *>(stmt);
    return set->is_local && set->name != nullptr && pg_strcasecmp(set->name, "fencing.token") == 0;
}

bool IsCommit(Node *stmt) {
    if (!IsA(stmt, TransactionStmt))
        return false;
    TransactionStmtKind kind = reinterpret_cast<TransactionStmt *>(stmt)->kind;
    return kind == TRANS_STMT_COMMIT || kind == TRANS_STMT_COMMIT_PREPARED;
}

void NoteSetLocalOutsideBlock(PlannedStmt *pstmt, const char *query, bool read_only_tree,
                              ProcessUtilityContext context, ParamListInfo params,
                              QueryEnvironment *env, DestReceiver *dest, QueryCompletion *qc) {
    Node *stmt = pstmt->utilityStmt;
    bool toplevel = context == PROCESS_UTILITY_TOPLEVEL;
    bool outside_block = toplevel && IsSetLocalOfToken(stmt) &&
                         (!IsTransactionBlock() || InImplicitBlock()) && !IsSubTransaction();
    if (toplevel && !IsCommit(stmt))
        lost_set_local_lxid = InvalidLocalTransactionId;
    bool aborted = IsAbortedTransactionBlockState();
    bool sub = IsSubTransaction();
    if (previous_utility_hook != nullptr)
        previous_utility_hook(pstmt, query, read_only_tree, context, params, env, dest, qc);
    else
        standard_ProcessUtility(pstmt, query, read_only_tree, context, params, env, dest, qc);
    if (outside_block)
        lost_set_local_lxid = CurrentLocalTransactionId();
    if (toplevel)
        NoteExplicitBlock(stmt, aborted, sub);
}

// A plannable statement after the SET LOCAL (nested ones run only inside a
// later top-level statement).
void ClearLostSetLocal(QueryDesc *query, int eflags) {
    lost_set_local_lxid = InvalidLocalTransactionId;
    if (previous_executor_start_hook != nullptr)
        previous_executor_start_hook(query, eflags);
    else
        standard_ExecutorStart(query, eflags);
}

void RefuseLostSetLocalAtCommit(XactEvent event, void *) {
    TrackChain(event);
    if (!LocalTransactionIdIsValid(lost_set_local_lxid))
        return;
    bool lost =
        event == XACT_EVENT_PRE_COMMIT && lost_set_local_lxid == CurrentLocalTransactionId();
    if (event != XACT_EVENT_PRE_COMMIT || lost)
        lost_set_local_lxid = InvalidLocalTransactionId;
    if (lost)
        ereport(ERROR,
                (errcode(ERRCODE_NO_ACTIVE_SQL_TRANSACTION),
                 errmsg("SET LOCAL fencing.token outside a transaction block would be lost"),
                 errdetail("The SET LOCAL was the last statement of its implicit transaction, "
                           "so the token ended with it, and the next statement would write "
                           "without it."),
                 errhint("Run BEGIN first and send the SET LOCAL as its own statement in the "
                         "block (the form Citus forwards to its workers); without a block, send "
                         "it and the write in one pipeline, before the same Sync.")));
}

}  // namespace

void DefineSettings() {
    defining = true;
    DefineCustomStringVariable(
        "fencing.token", "Fencing token carried by writes to protected tables.",
        "Use SET LOCAL so the token ends with the transaction. Empty means no token.",
        &token_setting, "", PGC_USERSET, GUC_NOT_IN_SAMPLE, CheckToken, AssignToken, nullptr);
    token_record = FindSettingRecord("fencing.token");
    // Superuser only: a client behind a pooler must not be able to switch it
    // on for the server connection it shares (GRANT SET ON PARAMETER, or
    // ALTER ROLE ... SET, for a dedicated connection's role).
    DefineCustomBoolVariable(
        "fencing.allow_session_token",
        "Lets a fencing.token set for the session fence writes of later transactions.",
        "Only for dedicated, unpooled connections: a session token stays on the connection.",
        &allow_session_token_setting, false, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "fencing.retire_batch_size", "Entries one retirement batch retires at most.",
        "Each batch locks its candidates, deletes them and raises the floor in one step.",
        &retire_batch_size_setting, 1000, 1, 1000000, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable(
        "fencing.auto_protect", "Protect every table that declares a fencing_token column.",
        nullptr, &auto_protect_setting, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    defining = false;
    previous_utility_hook = ProcessUtility_hook;
    ProcessUtility_hook = NoteSetLocalOutsideBlock;
    previous_executor_start_hook = ExecutorStart_hook;
    ExecutorStart_hook = ClearLostSetLocal;
    RegisterXactCallback(RefuseLostSetLocalAtCommit, nullptr);
    // Loaded inside a block whose start was not seen: taken as the client's
    // own, so that no SET LOCAL in it is refused (a lost token only makes
    // the next write fail with TF002).
    if (IsTransactionBlock())
        explicit_block_lxid = CurrentLocalTransactionId();
}

int RetireBatchSize() {
    return retire_batch_size_setting;
}

CarriedSetting TokenSetting(Token *out) {
    *out = session_token_value;
    if (!session_token_set)
        return CarriedSetting::kNone;
    // A session value fences nothing (unless allowed): it may be another
    // client's, left on a pooled connection. Only a write that offers no
    // token of its own is refused for it (RefuseStraySessionToken).
    if (!allow_session_token_setting && !SetInThisTransaction())
        return CarriedSetting::kStraySession;
    if (!session_token_valid)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
                 errmsg("invalid value for parameter \"fencing.token\": \"%s\"", token_setting),
                 errdetail("It was set before the fencing library was loaded."),
                 errhint("SET LOCAL fencing.token to a valid token, or RESET it.")));
    return CarriedSetting::kTransaction;
}

namespace {

// Where a session value of fencing.token came from, for the error.
const char *SessionTokenOrigin() {
    switch (token_record != nullptr ? token_record->source : PGC_S_SESSION) {
        case PGC_S_SESSION:
            return "by SET or set_config(..., false) in an earlier transaction on this connection "
                   "(behind a connection pooler, possibly by another client)";
        case PGC_S_GLOBAL:
        case PGC_S_DATABASE:
        case PGC_S_USER:
        case PGC_S_DATABASE_USER:
            return "by ALTER ROLE or ALTER DATABASE ... SET";
        case PGC_S_CLIENT:
            return "by a connection option (options=-c or PGOPTIONS)";
        default:
            return "in the server's configuration (postgresql.conf or the command line)";
    }
}

}  // namespace

void RefuseStraySessionToken() {
    ereport(ERROR,
            (errcode(ERRCODE_FENCING_TOKEN_REQUIRED),
             errmsg("fencing.token is set for the session, not for this transaction"),
             errdetail("fencing.token was set %s. It stays on the connection after the "
                       "transaction that set it, so it fences no write; this write carries no "
                       "token of its own (none in the token column, no fenced_*() call, no SET "
                       "LOCAL).",
                       SessionTokenOrigin()),
             errhint("Use SET LOCAL fencing.token inside BEGIN ... COMMIT, "
                     "set_config('fencing.token', ..., true), fenced_update(), or write the token "
                     "column; RESET fencing.token clears the session value.")));
    pg_unreachable();
}

bool AutoProtectEnabled() {
    return auto_protect_setting;
}

}  // namespace fencing::pg
