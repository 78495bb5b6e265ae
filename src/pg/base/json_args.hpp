// JSON arguments of the SQL API: {"column": value, ...} objects.
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "utils/jsonb.h"
}

namespace fencing::pg {

// A JSON object's top-level members, in jsonb's own (deterministic) key order,
// in palloc'd arrays sized by the object.
struct Members {
    int count;
    char **names;
    JsonbValue *values;
};

// Errors (22023) when doc is not an object, or is empty and !allow_empty;
// 54011 when it has more members than a table can have columns.
void ReadMembers(Jsonb *doc, const char *argname, bool allow_empty, Members *out);

// The JSON value as the text its column type's input function reads; nullptr
// for JSON null. For an array column, a JSON array becomes an array literal
// ({...}, elements quoted); otherwise nested values are JSON text.
char *JsonValueText(const JsonbValue &v, bool array_column);

// While converting a JSON member: an error context line naming it. Push with
// the member's name; pop (restore error_context_stack) when done.
void PushConversionContext(ErrorContextCallback *callback, const char *column);

// Converts a JSON value for a column with the column type's input function.
Datum JsonToColumn(const JsonbValue &v, Oid type, int32 typmod, const char *column, bool *isnull);

}  // namespace fencing::pg
