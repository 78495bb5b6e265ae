// The retirement worker: with fencing in shared_preload_libraries and
// fencing.retire_databases naming databases, one background worker per named
// database runs that database's automatic retirement policies every
// fencing.retire_naptime, in bounded batches that each commit on their own.
#pragma once

namespace fencing::pg {

// _PG_init: defines fencing.retire_naptime and fencing.retire_worker_batch, and,
// when loaded from shared_preload_libraries, fencing.retire_databases.
void DefineRetireWorkerSettings();

// _PG_init, while shared_preload_libraries is being processed (after
// DefineRetireWorkerSettings): registers one worker per named database.
void RegisterRetireWorkers();

}  // namespace fencing::pg
