// JSON arguments of the SQL API: {"column": value, ...} objects.
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "utils/jsonb.h"
}

namespace fencing::pg {

inline constexpr int kMaxColumns = 64;

// A JSON object's top-level members, in jsonb's own (deterministic) key order.
struct Members {
    int count;
    char *names[kMaxColumns];
    JsonbValue values[kMaxColumns];
};

// Errors (22023) when doc is not an object, or is empty and !allow_empty.
void ReadMembers(Jsonb *doc, const char *argname, bool allow_empty, Members *out);

// The JSON value as the text its column type's input function reads; nullptr for JSON null.
char *JsonScalarText(const JsonbValue &v);

// Converts a JSON value for a column with the column type's input function.
Datum JsonToColumn(const JsonbValue &v, Oid type, int32 typmod, const char *column, bool *isnull);

}  // namespace fencing::pg
