// pg/base owns the services every other folder of the PostgreSQL layer stands
// on: server headers, the C++ boundary, settings, the internal session,
// argument helpers and counters (see README.md).
//
// This header is the one place the PostgreSQL layer includes server headers.
// PostgreSQL is C: its headers go inside extern "C", postgres.h first.
#pragma once

extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
}
