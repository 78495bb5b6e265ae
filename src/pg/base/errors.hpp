// The extension's own SQLSTATEs. Class "TF" ("token fenced") is in the range
// SQL leaves to implementations (classes starting I-Z), so it cannot collide
// with a standard or PostgreSQL code.
#pragma once

#include "pg/base/pg.hpp"

// A write offered a token below the high-water mark (or equal to it, in strict mode).
#define ERRCODE_FENCING_STALE_TOKEN MAKE_SQLSTATE('T', 'F', '0', '0', '1')
// A table protected with require_token was written without a token.
#define ERRCODE_FENCING_TOKEN_REQUIRED MAKE_SQLSTATE('T', 'F', '0', '0', '2')
// A backend was ended by fencing_acquire: it wrote with the token of a lease
// that had ended (pg/api/takeover.hpp).
#define ERRCODE_FENCING_LEASE_TAKEN_OVER MAKE_SQLSTATE('T', 'F', '0', '0', '3')
// A write to a table restored from a dump without its fencing state, before
// the state is restored or its loss accepted (pg/guard/restored.hpp).
#define ERRCODE_FENCING_RESTORED_WITHOUT_STATE MAKE_SQLSTATE('T', 'F', '0', '0', '4')

#define FENCING_STALE_HINT \
    "The lock was lost: re-acquire it to get a new token, re-read the data, then write."
