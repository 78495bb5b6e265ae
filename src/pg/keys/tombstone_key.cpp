#include "pg/keys/tombstone_key.hpp"

#include "pg/types/token_type.hpp"

#include <cmath>

#include "pg/base/relation_args.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/itup.h"
#include "access/nbtree.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/heaptoast.h"
#include "access/toast_internals.h"
#include "catalog/dependency.h"
#include "catalog/pg_enum.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "port/pg_bswap.h"
#include "utils/array.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
}

#ifndef HAVE_INT128
#error "interval keys need a 128-bit integer type"
#endif

namespace fencing::pg {
namespace {

// How a key column's values are encoded, by base type. Every encoding is a
// function of the value alone (not of session settings), and equal values
// under the type's default btree equality encode alike.
enum class KeyKind {
    kRefused,
    kSend,      // the binary send form: fixed-width or raw bytes, one per value
    kText,      // text, varchar: the raw bytes in the server encoding
    kBpchar,    // the same, trailing spaces stripped (bpchar equality ignores them)
    kName,      // the raw bytes up to the terminating NUL
    kNumeric,   // normalized text: 1.0 and 1.00 are equal
    kFloat4,    // send form, -0 as +0 and every NaN as one NaN
    kFloat8,    // likewise
    kInterval,  // the 128-bit span interval_cmp compares (30-day months, 24-hour days)
    kEnum,      // the label's raw bytes (labels of one enum are unique)
};

KeyKind KindOf(Oid base) {
    switch (base) {
        // Fixed-width integers in network order, or raw bytes; none depends
        // on a session setting (timestamptz is stored in UTC).
        case INT2OID:
        case INT4OID:
        case INT8OID:
        case OIDOID:
        case BOOLOID:
        case UUIDOID:
        case DATEOID:
        case TIMEOID:
        case TIMESTAMPOID:
        case TIMESTAMPTZOID:
        case BYTEAOID:
        case CASHOID:
            return KeyKind::kSend;
        case TEXTOID:
        case VARCHAROID:
            return KeyKind::kText;
        case BPCHAROID:
            return KeyKind::kBpchar;
        case NAMEOID:
            return KeyKind::kName;
        case NUMERICOID:
            return KeyKind::kNumeric;
        case FLOAT4OID:
            return KeyKind::kFloat4;
        case FLOAT8OID:
            return KeyKind::kFloat8;
        case INTERVALOID:
            return KeyKind::kInterval;
        default:
            if (type_is_enum(base))
                return KeyKind::kEnum;
            if (IsFencingTokenType(base))
                return KeyKind::kSend;
            return KeyKind::kRefused;
    }
}

text *Hex(const char *bytes, Size len) {
    text *out = static_cast<text *>(palloc(VARHDRSZ + len * 2));
    SET_VARSIZE(out, VARHDRSZ + len * 2);
    hex_encode(bytes, len, VARDATA(out));
    return out;
}

// A float's bits with -0 as +0 and every NaN as the one NaN nan: equal under
// float equality, equal in bits.
template <typename Bits, typename Float>
Bits CanonicalFloatBits(Float f, Bits nan) {
    if (std::isnan(f))
        return nan;
    if (f == 0)
        f = 0;
    Bits bits;
    memcpy(&bits, &f, sizeof(bits));
    return bits;
}

// The span interval_cmp_value() of timestamp.c compares: months count 30
// days, days 24 hours. int64 days cannot overflow (int32 fields).
text *IntervalElement(const Interval *iv) {
    int64 days = iv->month * INT64CONST(30) + iv->day;
    int128 span = static_cast<int128>(iv->time) + static_cast<int128>(days) * USECS_PER_DAY;
    uint64 words[2] = {pg_hton64(static_cast<uint64>(static_cast<uint128>(span) >> 64)),
                       pg_hton64(static_cast<uint64>(span))};
    return Hex(reinterpret_cast<const char *>(words), sizeof(words));
}

text *EnumElement(Datum value) {
    HeapTuple tup = SearchSysCache1(ENUMOID, value);
    if (!HeapTupleIsValid(tup))
        elog(ERROR, "cache lookup failed for enum value %u", DatumGetObjectId(value));
    const char *label = NameStr(reinterpret_cast<Form_pg_enum>(GETSTRUCT(tup))->enumlabel);
    text *out = Hex(label, strnlen(label, NAMEDATALEN));
    ReleaseSysCache(tup);
    return out;
}

text *KeyElement(Oid type, Datum value) {
    Oid base = getBaseType(type);
    switch (KindOf(base)) {
        case KeyKind::kSend: {
            Oid send;
            bool varlena;
            getTypeBinaryOutputInfo(base, &send, &varlena);
            bytea *bin = OidSendFunctionCall(send, value);
            return Hex(VARDATA_ANY(bin), VARSIZE_ANY_EXHDR(bin));
        }
        case KeyKind::kText:
        case KeyKind::kBpchar: {
            // Not textsend(): it converts to the client encoding.
            text *t = DatumGetTextPP(value);
            const char *bytes = VARDATA_ANY(t);
            Size len = VARSIZE_ANY_EXHDR(t);
            if (KindOf(base) == KeyKind::kBpchar)
                while (len > 0 && bytes[len - 1] == ' ') --len;
            return Hex(bytes, len);
        }
        case KeyKind::kName: {
            const char *name = NameStr(*DatumGetName(value));
            return Hex(name, strnlen(name, NAMEDATALEN));
        }
        case KeyKind::kNumeric:
            return cstring_to_text(numeric_normalize(DatumGetNumeric(value)));
        case KeyKind::kFloat4: {
            uint32 bits = pg_hton32(CanonicalFloatBits<uint32>(DatumGetFloat4(value), 0x7fc00000));
            return Hex(reinterpret_cast<const char *>(&bits), sizeof(bits));
        }
        case KeyKind::kFloat8: {
            uint64 bits = pg_hton64(
                CanonicalFloatBits<uint64>(DatumGetFloat8(value), UINT64CONST(0x7ff8000000000000)));
            return Hex(reinterpret_cast<const char *>(&bits), sizeof(bits));
        }
        case KeyKind::kInterval:
            return IntervalElement(DatumGetIntervalP(value));
        case KeyKind::kEnum:
            return EnumElement(value);
        case KeyKind::kRefused:
            break;
    }
    ereport(ERROR,
            (errcode(ERRCODE_DATATYPE_MISMATCH),
             errmsg("a primary key of type %s cannot key fencing tombstones", format_type_be(type)),
             errhint("See fencing_protect() for the primary key types row scope accepts.")));
    pg_unreachable();
}

bool IsTextKind(KeyKind kind) {
    return kind == KeyKind::kText || kind == KeyKind::kBpchar || kind == KeyKind::kName;
}

constexpr const char *kRowScopeHint =
    "Row scope needs primary key columns of type smallint, integer, bigint, oid, boolean, uuid, "
    "date, time, timestamp, timestamptz, interval, real, double precision, numeric, money, "
    "bytea, an enum, fencing_token, or text, varchar, char or name with a deterministic "
    "collation (or domains over these), and a primary key that is not DEFERRABLE. Otherwise "
    "protect the table with scope => 'table' or 'resource', or unprotect it.";

// The guard's cache: the last relation that passed, forgotten on any relcache
// invalidation of it. An invalidation during the check voids its result.
Oid checked_relid = InvalidOid;
uint64 invalidations = 0;
// Whether every key of checked_relid has one size (see RowKeyWidthIsFixed),
// and whether one of its keys was found to fit (so all do).
bool checked_fixed_width = false;
bool checked_fits = false;
// What the last RequireCanonicalRowKey found.
bool last_fixed_width = false;

// Whether the canonical element of every value of this base type has one
// length: the fixed-width integers, dates and times sent in network order,
// the floats' bits, the interval's span. Not bytea, numeric, the strings and
// enums (their labels vary).
bool ElementWidthIsFixed(Oid base) {
    switch (KindOf(base)) {
        case KeyKind::kSend:
            return base != BYTEAOID && get_typlen(base) > 0;
        case KeyKind::kFloat4:
        case KeyKind::kFloat8:
        case KeyKind::kInterval:
            return true;
        default:
            return false;
    }
}

}  // namespace

void ForgetCheckedRowKey(Oid relid) {
    ++invalidations;
    if (relid == InvalidOid || relid == checked_relid) {
        checked_relid = InvalidOid;
        checked_fits = false;
    }
}

// fencing_token: the type of that name that belongs to this extension, not
// any type a user called so.

bool KeyTypeIsCanonical(Oid type, Oid collation, Oid opclass, const char **why) {
    Oid base = getBaseType(type);
    KeyKind kind = KindOf(base);
    if (kind == KeyKind::kRefused) {
        if (why != nullptr)
            *why = psprintf(
                "Type %s has no canonical key form: equal values can differ in their bytes, or "
                "in their text under different session settings.",
                format_type_be(base));
        return false;
    }
    if (IsTextKind(kind) && OidIsValid(collation) && !get_collation_isdeterministic(collation)) {
        if (why != nullptr)
            *why = psprintf(
                "Collation %s is nondeterministic: strings that differ in their bytes "
                "can be equal under it.",
                quote_identifier(get_collation_name(collation)));
        return false;
    }
    if (OidIsValid(opclass)) {
        // A non-default operator class is fine if its equality is the type's
        // own (text_pattern_ops uses text's =); any other equality is not
        // what the encoding above follows.
        Oid intype = get_opclass_input_type(opclass);
        Oid eq =
            get_opfamily_member(get_opclass_family(opclass), intype, intype, BTEqualStrategyNumber);
        TypeCacheEntry *tc = lookup_type_cache(base, TYPECACHE_EQ_OPR);
        if (!OidIsValid(eq) || eq != tc->eq_opr) {
            if (why != nullptr) {
                HeapTuple tup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclass));
                const char *name =
                    HeapTupleIsValid(tup)
                        ? pstrdup(
                              NameStr(reinterpret_cast<Form_pg_opclass>(GETSTRUCT(tup))->opcname))
                        : "?";
                if (HeapTupleIsValid(tup))
                    ReleaseSysCache(tup);
                *why = psprintf("Operator class %s does not use the equality of type %s.",
                                quote_identifier(name), format_type_be(base));
            }
            return false;
        }
    }
    return true;
}

namespace {

// A table the relcache shows without a primary key: the relcache leaves out a
// primary key that is not immediate, and without this check such a table
// would silently leave no tombstones.
void RefuseDeferrablePrimaryKey(Relation rel) {
    List *indexes = RelationGetIndexList(rel);
    ListCell *lc;
    bool deferrable = false;
    foreach (lc, indexes) {
        HeapTuple tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
        if (!HeapTupleIsValid(tup))
            continue;
        deferrable |= reinterpret_cast<Form_pg_index>(GETSTRUCT(tup))->indisprimary;
        ReleaseSysCache(tup);
    }
    list_free(indexes);
    if (deferrable)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("cannot fence table %s in row scope: its primary key is DEFERRABLE",
                               RelName(RelationGetRelid(rel))),
                        errdetail("A deleted row leaves a tombstone under its primary key, and "
                                  "PostgreSQL does not treat a deferrable primary key as the "
                                  "table's key: deleted rows would leave no tombstones."),
                        errhint("Make the primary key NOT DEFERRABLE, or protect the table with "
                                "scope => 'table' or 'resource'.")));
}

}  // namespace

void RequireCanonicalRowKey(Relation rel) {
    Oid relid = RelationGetRelid(rel);
    Oid pkindex = PrimaryKeyIndex(rel);
    if (!OidIsValid(pkindex)) {
        RefuseDeferrablePrimaryKey(rel);
        return;
    }
    last_fixed_width = false;
    HeapTuple ixtup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(pkindex));
    if (!HeapTupleIsValid(ixtup))
        elog(ERROR, "cache lookup failed for index %u", pkindex);
    auto *ix = reinterpret_cast<Form_pg_index>(GETSTRUCT(ixtup));
    bool isnull;
    auto *indclass = reinterpret_cast<oidvector *>(
        DatumGetPointer(SysCacheGetAttr(INDEXRELID, ixtup, Anum_pg_index_indclass, &isnull)));
    auto *indcollation = reinterpret_cast<oidvector *>(
        DatumGetPointer(SysCacheGetAttr(INDEXRELID, ixtup, Anum_pg_index_indcollation, &isnull)));
    TupleDesc desc = RelationGetDescr(rel);
    bool fixed_width = true;
    for (int i = 0; i < ix->indnkeyatts; ++i) {
        AttrNumber attnum = ix->indkey.values[i];
        if (attnum <= 0)
            continue;  // a primary key has no expression columns
        Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
        fixed_width = fixed_width && ElementWidthIsFixed(getBaseType(att->atttypid));
        const char *why;
        if (!KeyTypeIsCanonical(att->atttypid, indcollation->values[i], indclass->values[i],
                                &why)) {
            const char *column = pstrdup(NameStr(att->attname));
            Oid type = att->atttypid;
            ReleaseSysCache(ixtup);
            ereport(ERROR,
                    (errcode(ERRCODE_DATATYPE_MISMATCH),
                     errmsg("cannot fence table %s in row scope: primary key column \"%s\" of "
                            "type %s cannot key tombstones",
                            RelName(relid), column, format_type_be(type)),
                     errdetail("%s A deleted row leaves a tombstone under its primary key, so "
                               "keys that are equal must be encoded alike whatever the session's "
                               "settings.",
                               why),
                     errhint("%s", kRowScopeHint)));
        }
    }
    ReleaseSysCache(ixtup);
    last_fixed_width = fixed_width;
}

void RequireCanonicalRowKeyOf(Oid relid) {
    Relation rel = table_open(relid, AccessShareLock);
    RequireCanonicalRowKey(rel);
    table_close(rel, AccessShareLock);
}

void RequireCanonicalRowKeyCached(Relation rel) {
    if (RelationGetRelid(rel) == checked_relid)
        return;
    uint64 before = invalidations;
    RequireCanonicalRowKey(rel);
    if (invalidations == before) {
        checked_relid = RelationGetRelid(rel);
        checked_fixed_width = last_fixed_width;
        checked_fits = false;
    }
}

bool RowKeyFitsCached(Relation rel) {
    return checked_fits && RelationGetRelid(rel) == checked_relid;
}

void NoteRowKeyFits(Relation rel) {
    if (RelationGetRelid(rel) == checked_relid && checked_fixed_width)
        checked_fits = true;
}

// BTMaxItemSize() of a B-tree page of this build's block size.
constexpr Size kTombstoneIndexTupleLimit = MAXALIGN_DOWN(
    (BLCKSZ -
     MAXALIGN(SizeOfPageHeaderData + 3 * sizeof(ItemIdData) + 3 * sizeof(ItemPointerData)) -
     MAXALIGN(sizeof(BTPageOpaqueData))) /
    3);

Size TombstoneIndexTupleLimit() {
    return kTombstoneIndexTupleLimit;
}

Size TombstoneIndexTupleSize(Oid home_relid, Datum key, bool compressed) {
    // As index_form_tuple() builds the entry of row_tombstone's primary key
    // (relid, key): a key datum above TOAST_INDEX_TARGET is compressed with
    // the session's default_toast_compression if that makes it smaller.
    static TupleDesc desc = nullptr;
    if (desc == nullptr) {
        MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
        TupleDesc d = CreateTemplateTupleDesc(2);
        TupleDescInitEntry(d, 1, "relid", REGCLASSOID, -1, 0);
        TupleDescInitEntry(d, 2, "key", TEXTARRAYOID, -1, 1);
        FinishTupleDesc(d);
        MemoryContextSwitchTo(old);
        desc = d;
    }
    Datum values[2] = {ObjectIdGetDatum(home_relid), key};
    bool nulls[2] = {false, false};
    Datum packed = 0;
    if (compressed && VARSIZE_ANY(DatumGetPointer(key)) > TOAST_INDEX_TARGET) {
        packed = toast_compress_datum(key, InvalidCompressionMethod);
        if (DatumGetPointer(packed) != nullptr)
            values[1] = packed;
    }
    Size size = MAXALIGN(IndexInfoFindDataOffset(0) + heap_compute_data_size(desc, values, nulls));
    if (DatumGetPointer(packed) != nullptr)
        pfree(DatumGetPointer(packed));
    return size;
}

Datum TombstoneKey(int natts, const Oid *types, const Datum *values) {
    Datum *elems = static_cast<Datum *>(palloc(sizeof(Datum) * Max(natts, 1)));
    for (int i = 0; i < natts; ++i) elems[i] = PointerGetDatum(KeyElement(types[i], values[i]));
    return PointerGetDatum(construct_array(elems, natts, TEXTOID, -1, false, TYPALIGN_INT));
}

}  // namespace fencing::pg
