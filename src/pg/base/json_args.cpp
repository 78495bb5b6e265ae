// JSON arguments (pg/base/json_args.hpp). A value reaches its column as text
// through the column type's own input function, run as the caller: the same
// conversion, domain checks and errors as the literal in an INSERT.
#include "pg/base/json_args.hpp"

extern "C" {
#include "access/htup_details.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
}

namespace fencing::pg {

void ReadMembers(Jsonb *doc, const char *argname, bool allow_empty, Members *out) {
    out->count = 0;
    if (!JB_ROOT_IS_OBJECT(doc) || JB_ROOT_IS_SCALAR(doc))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s must be a JSON object", argname)));
    // The object header's count sizes the arrays; a document that has more
    // members than it says is corrupt.
    int capacity = JB_ROOT_COUNT(doc);
    if (capacity > MaxTupleAttributeNumber)
        ereport(ERROR, (errcode(ERRCODE_TOO_MANY_COLUMNS),
                        errmsg("%s has %d members, more than a table can have columns", argname,
                               capacity)));
    out->names = static_cast<char **>(palloc(sizeof(char *) * (capacity + 1)));
    out->values = static_cast<JsonbValue *>(palloc(sizeof(JsonbValue) * (capacity + 1)));
    JsonbIterator *it = JsonbIteratorInit(&doc->root);
    JsonbValue v;
    JsonbIteratorToken tok;
    while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE) {
        if (tok == WJB_KEY) {
            if (out->count >= capacity)
                elog(ERROR, "JSON object has more members than its header says");
            out->names[out->count] = pnstrdup(v.val.string.val, v.val.string.len);
        } else if (tok == WJB_VALUE) {
            out->values[out->count++] = v;
        }
    }
    if (out->count == 0 && !allow_empty)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s must not be empty", argname)));
}

namespace {

// A scalar's text as a SQL literal would spell it (numbers by numeric_out,
// so no precision is lost); nullptr for JSON null.
char *ScalarText(const JsonbValue &v) {
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

// An array literal's element, double-quoted so that commas, braces and
// spaces in it stay part of the element.
void AppendQuoted(StringInfo buf, const char *text) {
    appendStringInfoChar(buf, '"');
    for (const char *p = text; *p != '\0'; ++p) {
        if (*p == '"' || *p == '\\')
            appendStringInfoChar(buf, '\\');
        appendStringInfoChar(buf, *p);
    }
    appendStringInfoChar(buf, '"');
}

// A JSON array (in jsonb's binary form) as an array literal, nested arrays as
// sub-arrays.
void AppendArrayLiteral(StringInfo buf, JsonbContainer *container) {
    JsonbIterator *it = JsonbIteratorInit(container);
    JsonbValue v;
    JsonbIteratorToken tok;
    bool first = true;
    appendStringInfoChar(buf, '{');
    while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE) {
        if (tok != WJB_ELEM)
            continue;
        if (!first)
            appendStringInfoChar(buf, ',');
        first = false;
        if (v.type == jbvNull)
            appendStringInfoString(buf, "NULL");
        else if (v.type == jbvBinary && JsonContainerIsArray(v.val.binary.data))
            AppendArrayLiteral(buf, v.val.binary.data);
        else
            AppendQuoted(buf, ScalarText(v));
    }
    appendStringInfoChar(buf, '}');
}

}  // namespace

char *JsonValueText(const JsonbValue &v, bool array_column) {
    if (array_column && v.type == jbvBinary && JsonContainerIsArray(v.val.binary.data)) {
        StringInfoData buf;
        initStringInfo(&buf);
        AppendArrayLiteral(&buf, v.val.binary.data);
        return buf.data;
    }
    return ScalarText(v);
}

namespace {

void ConversionErrorContext(void *arg) {
    errcontext("converting JSON member \"%s\"", static_cast<const char *>(arg));
}

}  // namespace

// The callback lives in the caller's frame: an ereport unwinds past it, and
// PostgreSQL resets error_context_stack on the way.
void PushConversionContext(ErrorContextCallback *callback, const char *column) {
    callback->callback = ConversionErrorContext;
    callback->arg = const_cast<char *>(column);
    callback->previous = error_context_stack;
    error_context_stack = callback;
}

Datum JsonToColumn(const JsonbValue &v, Oid type, int32 typmod, const char *column, bool *isnull) {
    char *text = JsonValueText(v, OidIsValid(get_element_type(getBaseType(type))));
    *isnull = text == nullptr;
    if (text == nullptr)
        return (Datum)0;
    Oid input, ioparam;
    getTypeInputInfo(type, &input, &ioparam);
    ErrorContextCallback callback;
    PushConversionContext(&callback, column);
    Datum d = OidInputFunctionCall(input, text, ioparam, typmod);
    error_context_stack = callback.previous;
    return d;
}

}  // namespace fencing::pg
