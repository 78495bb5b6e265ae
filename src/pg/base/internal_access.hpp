// The one way into the extension's own tables (schema fencing).
//
// Callers' types, values, names and privileges are dealt with *before* this:
// every conversion, lookup and privilege check that involves something the
// caller controls runs as the caller. Only then does a function enter an
// internal session, which
//   * connects to SPI,
//   * switches to the extension's owner in a security-restricted context (so
//     the caller's grants and RLS policies cannot hide or change an HWM), and
//   * pins the search path to pg_catalog alone, pg_temp excluded (so no
//     caller-created type, operator or function can be picked up by a name),
// and runs only fixed, schema-qualified statements on the extension's tables.
// Begin/End pair; no destructors (an ereport in between unwinds through the
// transaction machinery, which restores the user, the GUCs and SPI).
#pragma once

#include "pg/base/pg.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "executor/spi.h"
}

namespace fencing::pg {

struct InternalSession {
    Oid saved_user;
    int saved_context;
    SearchPathPin search_path;
};

void BeginInternal(InternalSession *session);
void EndInternal(const InternalSession *session);

// The role that owns the fencing extension (InvalidOid when not installed).
// Cached per backend until a pg_authid change (the AUTHOID syscache callback,
// registered once from _PG_init).
Oid ExtensionOwner();
void RegisterInternalAccessCallbacks();
// The schema the extension's objects live in (InvalidOid when not installed).
Oid ExtensionSchema();
// The schema named fencing, looked up by name on every call (the extension
// can be dropped and created again within a session); InvalidOid when absent
// and missing_ok, else 3F000.
Oid ExtensionSchemaOid(bool missing_ok);
// The schema of the named extension (InvalidOid when it is not installed).
Oid ExtensionSchemaOf(const char *extname);

// A fixed statement of the extension, prepared on first use inside an
// internal session (so under the pinned search path) and kept for the
// backend's life (SPI_keepplan; PostgreSQL revalidates it after DDL).
struct InternalStatement {
    const char *sql;
    int nargs;
    Oid argtypes[8];
    SPIPlanPtr plan;
};

// Prepares sql and keeps the plan for the backend's life (SPI_keepplan;
// PostgreSQL revalidates it after DDL). Inside an SPI connection; names resolve
// under the search path in force now. On failure raises sqlstate with
// "<failure>: <SPI's reason>".
SPIPlanPtr PrepareKeptPlan(const char *sql, int nargs, const Oid *argtypes, int sqlstate,
                           const char *failure);

// stmt's plan, prepared and kept on first use (inside an internal session).
SPIPlanPtr InternalPlan(InternalStatement *stmt);

// Runs a prepared internal statement (inside an internal session); returns
// SPI_processed, raises on SPI failure. nulls as for SPI_execute_plan.
uint64 RunInternalStatement(InternalStatement *stmt, const Datum *values, const char *nulls);

// Runs a fixed statement of the extension; the caller is inside an internal
// session. Returns SPI_processed; raises on SPI failure.
uint64 RunInternalSql(const char *sql, int nargs, const Oid *types, const Datum *values,
                      const char *nulls, bool read_only);

// Runs work(arg) in an internal subtransaction (the PL/pgSQL exception-block
// pattern): released on success and true; on an error rolled back, the
// caller's memory context and resource owner restored, and false with the
// error copied into *caught (the error state flushed: the caller re-throws
// it with ReThrowError or reports it).
bool RunInSubTransaction(void (*work)(void *arg), void *arg, ErrorData **caught);

}  // namespace fencing::pg
