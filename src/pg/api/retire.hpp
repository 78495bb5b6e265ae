// Retirement of idle per-key state into floors: the SQL functions are in
// retire.cpp; this is what the background worker calls.
#pragma once

#include "pg/base/pg.hpp"

namespace fencing::pg {

// fencing_retire_due(): every enabled automatic policy the current user has
// the rights for (a superuser: all), up to max_entries entries. Called by the
// worker directly, never through SQL name resolution, so that no function a
// role created in the extension's schema can stand in for it.
int64 RetireDue(int64 max_entries);

}  // namespace fencing::pg
