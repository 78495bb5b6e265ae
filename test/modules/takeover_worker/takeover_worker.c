/*
 * takeover_worker: a test-only background worker for
 * test/t/084_takeover_bgworker.pl.
 *
 * It connects with BackgroundWorkerInitializeConnection(dbname, NULL, 0):
 * no role, so it runs as the bootstrap superuser and its PGPROC advertises
 * no role (roleId invalid). pg_terminate_backend() treats such a process as
 * a superuser's, and so must fencing_acquire's takeover: a non-superuser's
 * acquire may not end it. In one transaction it sets fencing.token, updates
 * the fenced table (which admits it at the resource's HWM: it then holds the
 * HWM lock in share mode), sleeps, and commits.
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(takeover_worker_launch);
PGDLLEXPORT void takeover_worker_main(Datum main_arg);

/* What the launcher hands the worker, in bgw_extra (128 bytes). */
typedef struct TakeoverWorkerArgs
{
	int64		token;
	int32		pause_ms;
	char		dbname[56];
	char		table[56];
} TakeoverWorkerArgs;

StaticAssertDecl(sizeof(TakeoverWorkerArgs) <= BGW_EXTRALEN,
				 "the worker's arguments must fit in bgw_extra");

static void
copy_name(char *dest, size_t size, text *src, const char *what)
{
	char	   *s = text_to_cstring(src);

	if (strlen(s) >= size)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("takeover_worker: %s must be shorter than %zu bytes", what, size)));
	strlcpy(dest, s, size);
}

static void
run_or_fail(const char *sql, int expected)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != expected)
		elog(FATAL, "takeover_worker: \"%s\" returned %d", sql, rc);
}

void
takeover_worker_main(Datum main_arg)
{
	TakeoverWorkerArgs args;
	StringInfoData buf;
	TimestampTz until;

	memcpy(&args, MyBgworkerEntry->bgw_extra, sizeof(args));
	/* SIGTERM (a takeover) ends the worker at its next interrupt check. */
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* No role: MyProc->roleId stays invalid, as for worker_spi's default. */
	BackgroundWorkerInitializeConnection(args.dbname, NULL, 0);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "takeover_worker: writing");

	initStringInfo(&buf);
	appendStringInfo(&buf, "SET LOCAL fencing.token = " INT64_FORMAT, args.token);
	run_or_fail(buf.data, SPI_OK_UTILITY);
	resetStringInfo(&buf);
	appendStringInfo(&buf, "UPDATE %s SET val = val + 1", quote_identifier(args.table));
	run_or_fail(buf.data, SPI_OK_UPDATE);

	/* The test waits for this before it acquires. */
	pgstat_report_activity(STATE_RUNNING, "takeover_worker: paused");
	elog(LOG, "takeover_worker: wrote with token " INT64_FORMAT ", pausing %d ms",
		 args.token, args.pause_ms);
	until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), args.pause_ms);
	for (;;)
	{
		long		left_ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), until);

		if (left_ms <= 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, left_ms,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}

	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	elog(LOG, "takeover_worker: committed");
	proc_exit(0);
}

Datum
takeover_worker_launch(PG_FUNCTION_ARGS)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	TakeoverWorkerArgs args;
	pid_t		pid;

	memset(&args, 0, sizeof(args));
	copy_name(args.dbname, sizeof(args.dbname), PG_GETARG_TEXT_PP(0), "dbname");
	copy_name(args.table, sizeof(args.table), PG_GETARG_TEXT_PP(1), "tbl");
	args.token = PG_GETARG_INT64(2);
	args.pause_ms = PG_GETARG_INT32(3);

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, sizeof(worker.bgw_library_name), "takeover_worker");
	snprintf(worker.bgw_function_name, sizeof(worker.bgw_function_name),
			 "takeover_worker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "takeover_worker");
	snprintf(worker.bgw_type, BGW_MAXLEN, "takeover_worker");
	worker.bgw_main_arg = (Datum) 0;
	memcpy(worker.bgw_extra, &args, sizeof(args));
	worker.bgw_notify_pid = MyProcPid;

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("takeover_worker: could not register a background worker"),
				 errhint("Raise max_worker_processes.")));
	if (WaitForBackgroundWorkerStartup(handle, &pid) != BGWH_STARTED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("takeover_worker: the background worker did not start")));
	PG_RETURN_INT32(pid);
}
