// The types folder owns the fencing_token type: its I/O and casts, and which
// column types hold a token.
#pragma once

#include "core/token.hpp"
#include "pg/base/pg.hpp"

namespace fencing::pg {

// Both raise the documented SQLSTATEs (22P02 syntax, 22003 range) on bad input.
Token ParseTokenOrError(const char *text);
Token TokenFromInt64(int64 value);

// _PG_init: the pg_type callback that drops the cached type OID.
void RegisterTokenTypeCallbacks();

// The fencing_token type of the installed extension (cached; InvalidOid when
// the extension is not installed in this database).
Oid FencingTokenTypeOid();
// Whether type is this extension's fencing_token (not a user type so named).
bool IsFencingTokenType(Oid type);
// A token column is fencing_token or bigint, by type OID (not a domain).
bool IsTokenColumnType(Oid type);

}  // namespace fencing::pg
