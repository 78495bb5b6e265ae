// One background worker per database of fencing.retire_databases: see
// pg/worker/retire_worker.hpp.
//
// A round, every fencing.retire_naptime: read where the extension lives and
// its version (a database without it, or with a version before retirement,
// is skipped with one LOG line per change of state), then call
// fencing_retire_due's implementation (pg/api/retire.hpp: called directly,
// with max_entries = fencing.retire_worker_batch) in a transaction of its own, again while a batch
// came back full. Each batch is a short transaction, and the worker's lock_timeout keeps it from
// queueing writers behind it: a batch that would wait fails, is logged, and is tried again next
// round. An error ends the round, not the worker.
#include "pg/worker/retire_worker.hpp"

#include "pg/api/retire.hpp"
#include "pg/base/boundary.hpp"
#include "pg/base/compat.hpp"
#include "pg/base/pg.hpp"

extern "C" {
#include "access/xact.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/varlena.h"
#include "utils/wait_event.h"
}

namespace fencing::pg {
namespace {

char *retire_databases = nullptr;
int retire_naptime_s = 60;
int retire_worker_batch = 10000;

// The first version with fencing_retire_due().
constexpr int kRetireMajor = 1;
constexpr int kRetireMinor = 5;
// Restart after a crash of the worker, in seconds.
constexpr int kRestartSeconds = 10;
// How long a batch may wait for a lock before it gives way to writers.
constexpr const char *kLockTimeout = "1s";

// The database names of fencing.retire_databases (a list of the strings, not
// downcased; quotes allowed around a name with a comma); false when the
// value does not parse or a name is too long.
bool ParseDatabases(const char *value, List **names) {
    char *raw = pstrdup(value != nullptr ? value : "");
    *names = NIL;
    if (!SplitGUCList(raw, ',', names))
        return false;
    ListCell *cell;
    foreach (cell, *names) {
        const char *name = static_cast<const char *>(lfirst(cell));
        if (name[0] == '\0' || strlen(name) >= NAMEDATALEN)
            return false;
    }
    return true;
}

bool CheckDatabases(char **newval, void **, GucSource) {
    List *names;
    if (ParseDatabases(*newval, &names))
        return true;
    GUC_check_errdetail(
        "fencing.retire_databases must be a comma-separated list of database "
        "names (each shorter than %d bytes).",
        NAMEDATALEN);
    return false;
}

}  // namespace

void DefineRetireWorkerSettings() {
    DefineCustomIntVariable("fencing.retire_naptime",
                            "Time between two rounds of the retirement worker.", nullptr,
                            &retire_naptime_s, 60, 1, INT_MAX / 1000, PGC_SIGHUP, GUC_UNIT_S,
                            nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "fencing.retire_worker_batch", "Entries the retirement worker retires per transaction.",
        nullptr, &retire_worker_batch, 10000, 1, INT_MAX, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    // Workers are registered at server start: only a preloaded library can
    // define (and use) the list.
    if (!process_shared_preload_libraries_in_progress)
        return;
    DefineCustomStringVariable(
        "fencing.retire_databases",
        "Databases whose automatic retirement policies a background worker runs.",
        "Comma-separated database names; empty (the default) starts no worker.", &retire_databases,
        "", PGC_POSTMASTER, 0, CheckDatabases, nullptr, nullptr);
}

namespace {

void RegisterWorker(const char *dbname) {
    BackgroundWorker worker;
    memset(&worker, 0, sizeof(worker));
    worker.bgw_flags = kDatabaseWorkerFlags;
    worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
    worker.bgw_restart_time = kRestartSeconds;
    strlcpy(worker.bgw_library_name, "fencing", BGW_MAXLEN);
    strlcpy(worker.bgw_function_name, "fencing_retire_worker_main", BGW_MAXLEN);
    snprintf(worker.bgw_name, BGW_MAXLEN, "fencing retire worker for %s", dbname);
    strlcpy(worker.bgw_type, "fencing retire worker", BGW_MAXLEN);
    strlcpy(worker.bgw_extra, dbname, BGW_EXTRALEN);
    RegisterBackgroundWorker(&worker);
}

// What the last round found, so that a skipped database is logged once.
enum class DbState { kUnknown, kReady, kNoExtension, kTooOld };
DbState last_state = DbState::kUnknown;

bool VersionSupportsRetirement(const char *version) {
    int major = 0, minor = 0;
    if (sscanf(version, "%d.%d", &major, &minor) < 1)
        return false;
    return major > kRetireMajor || (major == kRetireMajor && minor >= kRetireMinor);
}

void StartBatchTransaction(const char *activity) {
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    SPI_connect();
    PushActiveSnapshot(GetTransactionSnapshot());
    pgstat_report_activity(STATE_RUNNING, activity);
}

void EndBatchTransaction() {
    SPI_finish();
    PopActiveSnapshot();
    CommitTransactionCommand();
    pgstat_report_stat(false);
    pgstat_report_activity(STATE_IDLE, nullptr);
}

// Whether this database has the extension at a version with retirement;
// false (logged once per change) when it is skipped this round.
bool DatabaseReady() {
    StartBatchTransaction("fencing retire worker: reading the extension");
    const char *query =
        "SELECT e.extversion FROM pg_catalog.pg_extension e"
        " WHERE e.extname OPERATOR(pg_catalog.=) 'fencing'";
    if (SPI_execute(query, true, 1) != SPI_OK_SELECT)
        elog(ERROR, "fencing retire worker: reading pg_extension failed");
    DbState state = DbState::kNoExtension;
    if (SPI_processed == 1) {
        char *version = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
        state = VersionSupportsRetirement(version) ? DbState::kReady : DbState::kTooOld;
        if (state != DbState::kReady && state != last_state)
            ereport(LOG,
                    (errmsg("fencing retire worker: skipping database \"%s\": extension "
                            "fencing is at version %s, retirement needs %d.%d",
                            get_database_name(MyDatabaseId), version, kRetireMajor, kRetireMinor),
                     errhint("ALTER EXTENSION fencing UPDATE")));
    } else if (state != last_state)
        ereport(LOG, (errmsg("fencing retire worker: skipping database \"%s\": extension "
                             "fencing is not installed",
                             get_database_name(MyDatabaseId))));
    last_state = state;
    EndBatchTransaction();
    return state == DbState::kReady;
}

// One batch, in a transaction of its own: how many entries it retired. The
// extension's own code is called directly, not through SQL: the worker runs
// as a superuser, and a function another role created in the extension's
// schema (an overload of fencing_retire_due) must never run in its place.
int64 RunBatch() {
    StartBatchTransaction("fencing retire worker: retiring a batch");
    int64 retired = RetireDue(retire_worker_batch);
    EndBatchTransaction();
    return retired;
}

void ReloadIfAsked() {
    if (ConfigReloadPending) {
        ConfigReloadPending = false;
        ProcessConfigFile(PGC_SIGHUP);
    }
}

// One round: batches while they come back full. Errors end the round (the
// transaction is rolled back and the error logged), not the worker.
void RunRound(MemoryContext round_context) {
    MemoryContextReset(round_context);
    MemoryContext caller = MemoryContextSwitchTo(round_context);
    PG_TRY();
    {
        bool ready = DatabaseReady();
        int64 total = 0, retired = 0;
        int batches = 0;
        do {
            CHECK_FOR_INTERRUPTS();
            ReloadIfAsked();
            if (!ready)
                break;
            retired = RunBatch();
            total += retired;
            ++batches;
        } while (retired >= retire_worker_batch);
        if (total > 0)
            ereport(DEBUG1, (errmsg_internal("fencing retire worker: retired " INT64_FORMAT
                                             " entries in %d batches",
                                             total, batches)));
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(round_context);
        EmitErrorReport();
        AbortCurrentTransaction();
        FlushErrorState();
        pgstat_report_activity(STATE_IDLE, nullptr);
    }
    PG_END_TRY();
    MemoryContextSwitchTo(caller);
}

void WorkerMain() {
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    pqsignal(SIGTERM, die);
    BackgroundWorkerUnblockSignals();
    BackgroundWorkerInitializeConnection(MyBgworkerEntry->bgw_extra, nullptr, 0);
    // The worker runs as the bootstrap superuser: no name it resolves may
    // come from a schema another role can create objects in.
    SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
    SetConfigOption("lock_timeout", kLockTimeout, PGC_SUSET, PGC_S_OVERRIDE);
    SetConfigOption("application_name", "fencing retire worker", PGC_USERSET, PGC_S_OVERRIDE);
    pgstat_report_appname("fencing retire worker");
    ereport(LOG, (errmsg("fencing retire worker started for database \"%s\"",
                         MyBgworkerEntry->bgw_extra)));
    MemoryContext round_context =
        AllocSetContextCreate(TopMemoryContext, "fencing retire round", ALLOCSET_DEFAULT_SIZES);
    for (;;) {
        RunRound(round_context);
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                        static_cast<long>(retire_naptime_s) * 1000L, PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
        ReloadIfAsked();
    }
}

}  // namespace

void RegisterRetireWorkers() {
    // pg_upgrade starts the server in binary-upgrade mode: no retirement
    // while the catalogs are being restored.
    if (IsBinaryUpgrade)
        return;
    List *names;
    if (!ParseDatabases(retire_databases, &names))
        return;  // the check hook has refused the value already
    ListCell *cell;
    foreach (cell, names) RegisterWorker(static_cast<const char *>(lfirst(cell)));
}

}  // namespace fencing::pg

extern "C" PGDLLEXPORT void fencing_retire_worker_main(Datum);
extern "C" void fencing_retire_worker_main(Datum) {
    fencing::pg::WorkerMain();
}
