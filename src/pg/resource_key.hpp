#pragma once

#include "pg/pg.hpp"

namespace fencing::pg {

// Resource scope keys HWMs by the resource value's text. Only types whose text
// form is canonical for their equality qualify: text, varchar, name, integers,
// oid, uuid, bool, numeric (normalized), enums and fencing_token. Not
// timestamptz or date (their text follows TimeZone/DateStyle), float, char(n)
// (padding) or case-insensitive types.
bool ResourceTypeIsCanonical(Oid type);
char *ResourceKeyText(Oid type, Datum value);

}  // namespace fencing::pg
