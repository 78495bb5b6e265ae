// fenced_update(), fenced_delete() and fenced_upsert(): one fenced statement
// per call, run inside the fenced call scope (pg/guard/fenced_call.hpp).
#pragma once

#include "pg/base/pg.hpp"

namespace fencing::pg {

// Drops the kept plans of relid (InvalidOid: all), from module.cpp's relcache
// callback: any DDL on the table, or a policy change, invalidates them.
void ForgetFencedPlans(Oid relid);

}  // namespace fencing::pg
