#pragma once

#include "pg/base/pg.hpp"

namespace fencing::pg {

// Resource scope keys HWMs by the resource value's text. Only types whose text
// form is canonical for their equality qualify: text, varchar, name, integers,
// oid, uuid, bool, numeric (normalized), enums and fencing_token. Not
// timestamptz or date (their text follows TimeZone/DateStyle), float, char(n)
// (padding) or case-insensitive types.
bool ResourceTypeIsCanonical(Oid type);
char *ResourceKeyText(Oid type, Datum value);

// A resource's HWM and lease, and a namespace's owner, are keyed by
// (namespace, resource) in btree indexes, whose entries hold at most
// BTMaxItemSize bytes after compression. Refuses a longer key with 54000 and
// a message that says so, instead of PostgreSQL's "index row requires N
// bytes" naming an index of the extension. resource may be "" (a namespace
// alone). Costs two strlen() for ordinary keys.
void RequireStorableResourceKey(const char *name_space, const char *resource);

}  // namespace fencing::pg
