// The one place the PostgreSQL layer includes server headers. PostgreSQL is C:
// its headers go inside extern "C", postgres.h first.
#pragma once

extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
}
