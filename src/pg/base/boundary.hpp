// The C++/PostgreSQL boundary.
//
// Two rules:
//  * a C++ exception must never unwind through PostgreSQL frames, and
//  * a PostgreSQL error (a longjmp) must never skip a C++ destructor.
//
// The first holds by construction: the extension is compiled with
// -fno-exceptions and uses no library that throws (allocation is palloc, which
// reports failure with ereport), so no exception can exist. The second is a
// coding rule: function bodies are written in C style and keep no object with
// a non-trivial destructor alive across a call that can ereport.
//
// Every SQL-callable function is declared with FENCING_FUNCTION:
//   FENCING_FUNCTION(fencing_token_in) { ... return SomeDatum; }
#pragma once

#include "pg/base/pg.hpp"

#define FENCING_FUNCTION(name) \
    extern "C" {               \
    PG_FUNCTION_INFO_V1(name); \
    }                          \
    extern "C" Datum name(PG_FUNCTION_ARGS)
