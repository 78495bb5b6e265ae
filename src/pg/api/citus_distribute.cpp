// fencing_distribute(target regclass, distribution_column text DEFAULT NULL,
//                    colocate_with text DEFAULT 'default') RETURNS void
//
// Distributes a fenced table with Citus (a reference table without a
// distribution column) in one transaction: the coordinator's table is
// metadata, so its policy and guards go (Citus refuses a table with
// triggers), and each worker protects the shards Citus creates there in row
// scope (auto-protection), now and on later moves and splits. Refused
// (0A000, core/citus.hpp) when that would lose something: state kept outside
// the rows on this node, or a policy other than auto-protection's defaults.
#include "core/citus.hpp"
#include "pg/base/boundary.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/catalog/citus_node.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/hwm/store.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/guc.h"
}

namespace fencing::pg {
namespace {

// The facts the rule judges, read in an internal session.
void ReadDistributeFacts(Oid relid, bool distributed, CitusFacts *facts, bool *was_protected) {
    facts->action = CitusAction::kDistribute;
    facts->role = CitusNodeRole();
    facts->table = distributed ? CitusTable::kDistributed : CitusTable::kReference;
    InternalSession session;
    BeginInternal(&session);
    ProtectedRow row;
    *was_protected = ReadProtectedRow(relid, &row);
    Token table_hwm;
    facts->tombstones =
        HasTombstones(relid) || TombstoneFloor(relid) > 0 || ReadTableHwm(relid, &table_hwm);
    char token_column[NAMEDATALEN];
    facts->scope = *was_protected ? row.scope : Scope::kRow;
    facts->custom_policy =
        *was_protected &&
        (row.scope != Scope::kRow || row.on_stale != OnStale::kError || row.strict ||
         row.require_token != RequireTokenByDefault() || TokenColumns(relid, token_column) != 1 ||
         strcmp(token_column, row.token_column) != 0);
    EndInternal(&session);
}

void RunCitus(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls) {
    if (SPI_connect() != SPI_OK_CONNECT)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("fencing: SPI_connect failed")));
    SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
    SPI_finish();
}

}  // namespace
}  // namespace fencing::pg

using namespace fencing;
using namespace fencing::pg;

FENCING_FUNCTION(fencing_distribute) {
    Oid relid = ExistingRelationArg(fcinfo, 0, "target");
    RequireRelationOwner(relid);
    bool distributed = !PG_ARGISNULL(1);
    CitusFacts facts;
    bool was_protected;
    ReadDistributeFacts(relid, distributed, &facts, &was_protected);
    RefuseJudged(facts, relid);
    if (was_protected) {
        InternalSession session;
        BeginInternal(&session);
        DeleteProtectedRow(relid);  // fencing.protected_sync removes the guards
        EndInternal(&session);
    }
    // The placements created here (a reference table's on the coordinator)
    // are protected as the workers' are, whatever this session set.
    (void)set_config_option("fencing.auto_protect", "on", PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_LOCAL, true, 0, false);
    // As the caller: Citus checks its rights.
    if (distributed) {
        Oid types[] = {REGCLASSOID, TEXTOID, TEXTOID};
        Datum values[] = {ObjectIdGetDatum(relid), PG_GETARG_DATUM(1),
                          PG_ARGISNULL(2) ? CStringGetTextDatum("default") : PG_GETARG_DATUM(2)};
        RunCitus("SELECT pg_catalog.create_distributed_table($1, $2, colocate_with => $3)", 3,
                 types, values, nullptr);
    } else {
        Oid types[] = {REGCLASSOID};
        Datum values[] = {ObjectIdGetDatum(relid)};
        RunCitus("SELECT pg_catalog.create_reference_table($1)", 1, types, values, nullptr);
    }
    PG_RETURN_VOID();
}
