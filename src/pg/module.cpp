// Module entry: the magic block and load-time initialisation.
#include "pg/durability.hpp"
#include "pg/guc.hpp"
#include "pg/pg.hpp"
#include "pg/stats.hpp"
#include "pg/unfenced.hpp"

extern "C" {
#include "utils/guc.h"
}

extern "C" {
PG_MODULE_MAGIC;
void _PG_init(void);
}

void _PG_init(void) {
    fencing::pg::DefineSettings();
    fencing::pg::DefineStatsSettings();
    MarkGUCPrefixReserved("fencing");
    fencing::pg::RegisterDurabilityCallbacks();
    fencing::pg::RegisterUnfencedCallbacks();
}
