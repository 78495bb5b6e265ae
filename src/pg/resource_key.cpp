// Resource scope keys HWMs by the resource value's canonical text.
#include "pg/resource_key.hpp"

#include "pg/token_type.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
}

namespace fencing::pg {

bool ResourceTypeIsCanonical(Oid type) {
    Oid base = getBaseType(type);
    switch (base) {
        case TEXTOID:
        case VARCHAROID:
        case NAMEOID:
        case INT2OID:
        case INT4OID:
        case INT8OID:
        case OIDOID:
        case UUIDOID:
        case BOOLOID:
        case NUMERICOID:
            return true;
        default:
            // Enums print their label; fencing_token prints its decimal value.
            return type_is_enum(base) || IsFencingTokenType(base);
    }
}

char *ResourceKeyText(Oid type, Datum value) {
    if (getBaseType(type) == NUMERICOID)
        return numeric_normalize(DatumGetNumeric(value));
    Oid output;
    bool varlena;
    getTypeOutputInfo(type, &output, &varlena);
    return OidOutputFunctionCall(output, value);
}

}  // namespace fencing::pg
