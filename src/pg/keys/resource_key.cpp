// Resource scope keys HWMs by the resource value's canonical text.
#include "pg/keys/resource_key.hpp"

#include "pg/types/token_type.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/heaptoast.h"
#include "access/nbtree.h"
#include "access/toast_compression.h"
#include "access/toast_internals.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
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

namespace {

// The last type's output function, for the rest of its transaction: the rows
// of a statement share their resource column's type, and looking the
// function up per row cost more than calling it. Kept in
// TopTransactionContext, as long as the cache is asked.
struct OutputOfType {
    LocalTransactionId lxid = InvalidLocalTransactionId;
    Oid type = InvalidOid;
    bool numeric = false;
    FmgrInfo output;
};
OutputOfType output_of_type;

}  // namespace

char *ResourceKeyText(Oid type, Datum value) {
    OutputOfType &c = output_of_type;
    if (c.lxid != CurrentLocalTransactionId() || c.type != type) {
        c.type = InvalidOid;
        c.numeric = getBaseType(type) == NUMERICOID;
        if (!c.numeric) {
            Oid output;
            bool varlena;
            getTypeOutputInfo(type, &output, &varlena);
            fmgr_info_cxt(output, &c.output, TopTransactionContext);
        }
        c.type = type;
        c.lxid = CurrentLocalTransactionId();
    }
    if (c.numeric)
        return numeric_normalize(DatumGetNumeric(value));
    return OutputFunctionCall(&c.output, value);
}

namespace {

// The btree limit for an 8 kB (BLCKSZ) page, as BTMaxItemSize() computes it.
constexpr Size kBtreeMaxItem = MAXALIGN_DOWN(
    (BLCKSZ -
     MAXALIGN(SizeOfPageHeaderData + 3 * sizeof(ItemIdData) + 3 * sizeof(ItemPointerData)) -
     MAXALIGN(sizeof(BTPageOpaqueData))) /
    3);

// The index tuple's length after a text of len bytes is added at offset off,
// as index_form_tuple() lays it out: a short header (unaligned) when it fits
// one, else int-aligned with a 4-byte header, compressed in line when above
// TOAST_INDEX_TARGET.
Size AddIndexedText(Size off, const char *s, Size len) {
    if (len + VARHDRSZ_SHORT <= VARATT_SHORT_MAX)
        return off + len + VARHDRSZ_SHORT;
    Size size = len + VARHDRSZ;
    if (size > TOAST_INDEX_TARGET) {
        Datum compressed = toast_compress_datum(
            PointerGetDatum(cstring_to_text_with_len(s, static_cast<int>(len))),
            default_toast_compression);
        if (DatumGetPointer(compressed) != nullptr) {
            size = VARSIZE(DatumGetPointer(compressed));
            pfree(DatumGetPointer(compressed));
        }
    }
    return INTALIGN(off) + size;
}

}  // namespace

void RequireStorableResourceKey(const char *name_space, const char *resource) {
    Size ns_len = strlen(name_space);
    Size res_len = strlen(resource);
    // Below this, any key fits whatever its compression.
    if (ns_len + res_len + 2 * MAXIMUM_ALIGNOF + 2 * VARHDRSZ + sizeof(IndexTupleData) <=
        kBtreeMaxItem)
        return;
    Size needed = MAXALIGN(AddIndexedText(
        AddIndexedText(sizeof(IndexTupleData), name_space, ns_len), resource, res_len));
    if (needed <= kBtreeMaxItem)
        return;
    ereport(ERROR,
            (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
             errmsg("fencing resource key too long: namespace of %zu bytes, resource of %zu "
                    "bytes",
                    ns_len, res_len),
             errdetail("High-water marks and leases are keyed by namespace and resource in a "
                       "btree index, which holds at most %zu bytes per key after compression; "
                       "this key needs about %zu.",
                       kBtreeMaxItem, needed),
             errhint("Use a shorter resource value or namespace, such as a hash of it.")));
}

}  // namespace fencing::pg
