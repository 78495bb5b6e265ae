#include "pg/json_args.hpp"

extern "C" {
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
}

namespace fencing::pg {

void ReadMembers(Jsonb *doc, const char *argname, bool allow_empty, Members *out) {
    out->count = 0;
    if (!JB_ROOT_IS_OBJECT(doc))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s must be a JSON object", argname)));
    JsonbIterator *it = JsonbIteratorInit(&doc->root);
    JsonbValue v;
    JsonbIteratorToken tok;
    while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE) {
        if (tok == WJB_KEY) {
            if (out->count == kMaxColumns)
                ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                                errmsg("%s has more than %d members", argname, kMaxColumns)));
            out->names[out->count] = pnstrdup(v.val.string.val, v.val.string.len);
        } else if (tok == WJB_VALUE) {
            out->values[out->count++] = v;
        }
    }
    if (out->count == 0 && !allow_empty)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s must not be empty", argname)));
}

// The JSON value as the text its column type's input function reads; NULL for JSON null.
char *JsonScalarText(const JsonbValue &v) {
    switch (v.type) {
        case jbvNull:
            return nullptr;
        case jbvString:
            return pnstrdup(v.val.string.val, v.val.string.len);
        case jbvNumeric:
            return DatumGetCString(
                DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
        case jbvBool:
            return pstrdup(v.val.boolean ? "true" : "false");
        default: {
            // Nested arrays and objects, for json/jsonb/array columns.
            StringInfoData buf;
            initStringInfo(&buf);
            return JsonbToCString(&buf, v.val.binary.data, v.val.binary.len);
        }
    }
}

namespace {

void ConversionErrorContext(void *arg) {
    errcontext("converting JSON member \"%s\"", static_cast<const char *>(arg));
}

}  // namespace

Datum JsonToColumn(const JsonbValue &v, Oid type, int32 typmod, const char *column, bool *isnull) {
    char *text = JsonScalarText(v);
    *isnull = text == nullptr;
    if (text == nullptr)
        return (Datum)0;
    Oid input, ioparam;
    getTypeInputInfo(type, &input, &ioparam);
    ErrorContextCallback callback;
    callback.callback = ConversionErrorContext;
    callback.arg = const_cast<char *>(column);
    callback.previous = error_context_stack;
    error_context_stack = &callback;
    Datum d = OidInputFunctionCall(input, text, ioparam, typmod);
    error_context_stack = callback.previous;
    return d;
}

}  // namespace fencing::pg
