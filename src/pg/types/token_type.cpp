// Type I/O and casts for fencing_token. Comparison, hashing and sort support
// reuse PostgreSQL's own int8 functions (see sql/fencing--1.0.sql): the
// representation is the same by-value int64.
#include "core/token.hpp"
#include "pg/base/boundary.hpp"
#include "pg/base/compat.hpp"
#include "pg/types/token_type.hpp"
#include "pg/base/internal_access.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/syscache.h"
}

namespace fencing::pg {

Token TokenFromInt64(int64 value) {
    if (value < 0)
        ereport(ERROR,
                (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE), errmsg("fencing_token out of range"),
                 errdetail("A fencing token cannot be negative; got " INT64_FORMAT ".", value)));
    return value;
}

Token ParseTokenOrError(const char *text) {
    ParseResult result = ParseToken(text);
    switch (result.status) {
        case ParseStatus::kOk:
            break;
        case ParseStatus::kSyntaxError:
            ereport(ERROR,
                    (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
                     errmsg("invalid input syntax for type %s: \"%s\"", "fencing_token", text),
                     errhint("A fencing token is a decimal integer from 0 to %s, or "
                             "hexadecimal with a 0x prefix.",
                             "9223372036854775807")));
            break;
        case ParseStatus::kOutOfRange:
            ereport(ERROR,
                    (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                     errmsg("value \"%s\" is out of range for type %s", text, "fencing_token")));
            break;
    }
    return result.value;
}

namespace {

Oid token_type_oid = InvalidOid;

void ForgetTokenType(Datum, SysCacheCallbackId, uint32) {
    token_type_oid = InvalidOid;
}

}  // namespace

void RegisterTokenTypeCallbacks() {
    CacheRegisterSyscacheCallback(TYPEOID, ForgetTokenType, 0);
}

Oid FencingTokenTypeOid() {
    if (!OidIsValid(token_type_oid)) {
        Oid nsp = ExtensionSchema();
        if (OidIsValid(nsp))
            token_type_oid =
                GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("fencing_token"),
                                ObjectIdGetDatum(nsp));
    }
    return token_type_oid;
}

bool IsFencingTokenType(Oid type) {
    return OidIsValid(type) && type == FencingTokenTypeOid();
}

bool IsTokenColumnType(Oid type) {
    return type == INT8OID || IsFencingTokenType(type);
}

}  // namespace fencing::pg

using fencing::Token;

FENCING_FUNCTION(fencing_token_in) {
    const char *text = PG_GETARG_CSTRING(0);
    PG_RETURN_INT64(fencing::pg::ParseTokenOrError(text));
}

FENCING_FUNCTION(fencing_token_out) {
    char *text = static_cast<char *>(palloc(fencing::kTokenTextCapacity));
    fencing::FormatToken(PG_GETARG_INT64(0), text);
    PG_RETURN_CSTRING(text);
}

// Binary form: 8 bytes, network order, validated like text input.
FENCING_FUNCTION(fencing_token_recv) {
    StringInfo buf = reinterpret_cast<StringInfo>(PG_GETARG_POINTER(0));
    PG_RETURN_INT64(fencing::pg::TokenFromInt64(pq_getmsgint64(buf)));
}

FENCING_FUNCTION(fencing_token_send) {
    StringInfoData buf;
    pq_begintypsend(&buf);
    pq_sendint64(&buf, PG_GETARG_INT64(0));
    PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

FENCING_FUNCTION(fencing_token_from_int8) {
    PG_RETURN_INT64(fencing::pg::TokenFromInt64(PG_GETARG_INT64(0)));
}

FENCING_FUNCTION(fencing_token_from_int4) {
    PG_RETURN_INT64(fencing::pg::TokenFromInt64(PG_GETARG_INT32(0)));
}

// Drivers bind small integers as smallint (psycopg: a Python int that fits).
FENCING_FUNCTION(fencing_token_from_int2) {
    PG_RETURN_INT64(fencing::pg::TokenFromInt64(PG_GETARG_INT16(0)));
}

// ... and integers beyond bigint, or Decimals, as numeric: integral values
// only; nothing is rounded.
FENCING_FUNCTION(fencing_token_from_numeric) {
    Numeric value = PG_GETARG_NUMERIC(0);
    if (numeric_is_nan(value) || numeric_is_inf(value))
        ereport(ERROR,
                (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE), errmsg("fencing_token out of range"),
                 errdetail("A fencing token is a finite integer.")));
    Datum truncated = DirectFunctionCall2(numeric_trunc, NumericGetDatum(value), Int32GetDatum(0));
    if (!DatumGetBool(DirectFunctionCall2(numeric_eq, NumericGetDatum(value), truncated)))
        ereport(
            ERROR,
            (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
             errmsg("invalid fencing_token: %s is not an integer",
                    DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(value))))));
    Datum top = NumericGetDatum(int64_to_numeric(PG_INT64_MAX));
    if (DatumGetBool(DirectFunctionCall2(numeric_gt, NumericGetDatum(value), top)))
        ereport(ERROR,
                (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE), errmsg("fencing_token out of range"),
                 errdetail("A fencing token is at most 9223372036854775807.")));
    int64 integer = DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(value)));
    PG_RETURN_INT64(fencing::pg::TokenFromInt64(integer));
}

FENCING_FUNCTION(fencing_token_zxid_epoch) {
    PG_RETURN_INT64(fencing::ZxidEpoch(PG_GETARG_INT64(0)));
}

FENCING_FUNCTION(fencing_token_zxid_counter) {
    PG_RETURN_INT64(fencing::ZxidCounter(PG_GETARG_INT64(0)));
}

FENCING_FUNCTION(fencing_token_from_zxid) {
    int64 epoch = PG_GETARG_INT64(0);
    int64 counter = PG_GETARG_INT64(1);
    Token token;
    if (!fencing::MakeZxid(epoch, counter, &token))
        ereport(ERROR,
                (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                 errmsg("zxid epoch " INT64_FORMAT " or counter " INT64_FORMAT " out of range",
                        epoch, counter),
                 errdetail("The epoch must be between 0 and %d, the counter between 0 and %u.",
                           INT32_MAX, UINT32_MAX)));
    PG_RETURN_INT64(token);
}
