#include "pg/row_key.hpp"

#include "pg/hwm_store.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "access/stratnum.h"
}

namespace fencing::pg {
namespace {

// Per-relation prepared lock probe, invalidated with the relation's relcache entry.
struct ProbeEntry {
    Oid relid;  // hash key
    bool valid;
    SPIPlanPtr plan;
    int natts;
    AttrNumber attnums[32];
};
HTAB *probe_cache = nullptr;

void InvalidateProbe(Datum, Oid relid) {
    if (probe_cache == nullptr)
        return;
    HASH_SEQ_STATUS seq;
    hash_seq_init(&seq, probe_cache);
    for (auto *e = static_cast<ProbeEntry *>(hash_seq_search(&seq)); e != nullptr;
         e = static_cast<ProbeEntry *>(hash_seq_search(&seq))) {
        if (relid == InvalidOid || e->relid == relid)
            e->valid = false;
    }
}

ProbeEntry *ProbeFor(Relation rel, const PrimaryKey &pk, Oid pkindex) {
    if (probe_cache == nullptr) {
        HASHCTL ctl;
        ctl.keysize = sizeof(Oid);
        ctl.entrysize = sizeof(ProbeEntry);
        ctl.hcxt = TopMemoryContext;
        probe_cache =
            hash_create("fencing probe plans", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
        CacheRegisterRelcacheCallback(InvalidateProbe, 0);
    }
    Oid relid = RelationGetRelid(rel);
    bool found;
    auto *entry = static_cast<ProbeEntry *>(hash_search(probe_cache, &relid, HASH_ENTER, &found));
    if (found && entry->valid)
        return entry;
    if (found && entry->plan != nullptr)
        SPI_freeplan(entry->plan);
    entry->plan = nullptr;
    entry->valid = false;

    // SELECT 1 FROM ONLY "s"."t" WHERE "a" OPERATOR("s".=) $1 AND ... FOR KEY SHARE
    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfo(&sql, "SELECT 1 FROM ONLY %s WHERE ",
                     quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
                                                RelationGetRelationName(rel)));
    Oid argtypes[32];
    AppendKeyPredicate(&sql, rel, pk, pkindex, argtypes);
    appendStringInfoString(&sql, " FOR KEY SHARE");
    SPIPlanPtr plan = SPI_prepare(sql.data, pk.natts, argtypes);
    if (plan == nullptr)
        elog(ERROR, "fencing: could not prepare key probe: %s", SPI_result_code_string(SPI_result));
    SPI_keepplan(plan);
    entry->plan = plan;
    entry->natts = pk.natts;
    for (int i = 0; i < pk.natts; ++i) entry->attnums[i] = pk.attnums[i];
    entry->valid = true;
    return entry;
}

// Hex of the type's binary send form: unlike text output it does not depend
// on DateStyle, TimeZone or extra_float_digits.
text *KeyElement(Oid type, Datum value) {
    Oid send;
    bool varlena;
    getTypeBinaryOutputInfo(type, &send, &varlena);
    bytea *bin = OidSendFunctionCall(send, value);
    Size len = VARSIZE_ANY_EXHDR(bin);
    text *out = static_cast<text *>(palloc(VARHDRSZ + len * 2));
    SET_VARSIZE(out, VARHDRSZ + len * 2);
    hex_encode(VARDATA_ANY(bin), len, VARDATA(out));
    return out;
}

Datum KeyOfRow(Relation rel, const PrimaryKey &pk, HeapTuple row, Datum *values) {
    TupleDesc desc = RelationGetDescr(rel);
    Oid types[32];
    for (int i = 0; i < pk.natts; ++i) {
        bool isnull;
        values[i] = heap_getattr(row, pk.attnums[i], desc, &isnull);
        types[i] = TupleDescAttr(desc, pk.attnums[i] - 1)->atttypid;
    }
    return TombstoneKey(pk.natts, types, values);
}

}  // namespace

void AppendKeyPredicate(StringInfo sql, Relation rel, const PrimaryKey &pk, Oid pkindex,
                        Oid *argtypes) {
    // Every operator is the primary key opclass's own equality operator, named
    // with its schema, so the caller's search_path cannot change what runs.
    HeapTuple ixtup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(pkindex));
    if (!HeapTupleIsValid(ixtup))
        elog(ERROR, "cache lookup failed for index %u", pkindex);
    bool isnull;
    Datum classdatum = SysCacheGetAttr(INDEXRELID, ixtup, Anum_pg_index_indclass, &isnull);
    oidvector *indclass = reinterpret_cast<oidvector *>(DatumGetPointer(classdatum));
    TupleDesc desc = RelationGetDescr(rel);
    for (int i = 0; i < pk.natts; ++i) {
        Form_pg_attribute att = TupleDescAttr(desc, pk.attnums[i] - 1);
        Oid opfamily = get_opclass_family(indclass->values[i]);
        Oid opcintype = get_opclass_input_type(indclass->values[i]);
        Oid argtype = IsPolymorphicType(opcintype) ? att->atttypid : opcintype;
        Oid eqop = get_opfamily_member(opfamily, argtype, argtype, BTEqualStrategyNumber);
        if (!OidIsValid(eqop))
            elog(ERROR, "no equality operator for primary key column \"%s\"",
                 NameStr(att->attname));
        argtypes[i] = argtype;
        HeapTuple optup = SearchSysCache1(OPEROID, ObjectIdGetDatum(eqop));
        if (!HeapTupleIsValid(optup))
            elog(ERROR, "cache lookup failed for operator %u", eqop);
        auto *op = reinterpret_cast<Form_pg_operator>(GETSTRUCT(optup));
        appendStringInfo(sql, "%s%s OPERATOR(%s.%s) $%d", i > 0 ? " AND " : "",
                         quote_identifier(NameStr(att->attname)),
                         quote_identifier(get_namespace_name(op->oprnamespace)),
                         NameStr(op->oprname), i + 1);
        ReleaseSysCache(optup);
    }
    ReleaseSysCache(ixtup);
}

bool GetPrimaryKey(Relation rel, PrimaryKey *pk) {
    Oid index = RelationGetPrimaryKeyIndex(rel);
    if (!OidIsValid(index))
        return false;
    HeapTuple ixtup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
    if (!HeapTupleIsValid(ixtup))
        elog(ERROR, "cache lookup failed for index %u", index);
    auto *ix = reinterpret_cast<Form_pg_index>(GETSTRUCT(ixtup));
    pk->natts = ix->indnkeyatts;
    for (int i = 0; i < pk->natts && i < 32; ++i) pk->attnums[i] = ix->indkey.values[i];
    ReleaseSysCache(ixtup);
    return pk->natts > 0 && pk->natts <= 32;
}

Datum TombstoneKey(int natts, const Oid *types, const Datum *values) {
    Datum elems[32];
    for (int i = 0; i < natts; ++i) elems[i] = PointerGetDatum(KeyElement(types[i], values[i]));
    return PointerGetDatum(construct_array(elems, natts, TEXTOID, -1, false, TYPALIGN_INT));
}

const char *RowKeyDescription(Relation rel, HeapTuple row) {
    StringInfoData buf;
    initStringInfo(&buf);
    PrimaryKey pk;
    if (!GetPrimaryKey(rel, &pk)) {
        appendStringInfo(&buf, "row (%u,%u)", ItemPointerGetBlockNumber(&row->t_self),
                         ItemPointerGetOffsetNumber(&row->t_self));
        return buf.data;
    }
    TupleDesc desc = RelationGetDescr(rel);
    appendStringInfoString(&buf, "key (");
    for (int i = 0; i < pk.natts; ++i)
        appendStringInfo(
            &buf, "%s%s", i > 0 ? ", " : "",
            quote_identifier(NameStr(TupleDescAttr(desc, pk.attnums[i] - 1)->attname)));
    appendStringInfoString(&buf, ")=(");
    for (int i = 0; i < pk.natts; ++i) {
        Form_pg_attribute att = TupleDescAttr(desc, pk.attnums[i] - 1);
        bool isnull;
        Datum d = heap_getattr(row, pk.attnums[i], desc, &isnull);
        Oid output;
        bool varlena;
        getTypeOutputInfo(att->atttypid, &output, &varlena);
        appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "",
                         isnull ? "null" : OidOutputFunctionCall(output, d));
    }
    appendStringInfoChar(&buf, ')');
    return buf.data;
}

bool RowTombstone(Relation rel, Oid home_relid, HeapTuple new_row, Token *hwm) {
    PrimaryKey pk;
    if (!GetPrimaryKey(rel, &pk))
        return false;
    Datum values[32];
    Datum key = KeyOfRow(rel, pk, new_row, values);
    Oid pkindex = RelationGetPrimaryKeyIndex(rel);

    InternalAccess access;
    SPI_connect();
    BeginInternalAccess(&access);
    ProbeEntry *probe = ProbeFor(rel, pk, pkindex);
    int rc = SPI_execute_plan(probe->plan, values, nullptr, false, 1);
    if (rc < 0)
        elog(ERROR, "fencing: key probe failed: %s", SPI_result_code_string(rc));
    bool found = LookupTombstone(home_relid, key, hwm);
    EndInternalAccess(&access);
    SPI_finish();
    return found;
}

void LeaveTombstone(Relation rel, Oid home_relid, HeapTuple old_row, Token hwm) {
    PrimaryKey pk;
    if (!GetPrimaryKey(rel, &pk))
        return;
    Datum values[32];
    Datum key = KeyOfRow(rel, pk, old_row, values);
    InternalAccess access;
    SPI_connect();
    BeginInternalAccess(&access);
    RaiseTombstone(home_relid, key, hwm);
    EndInternalAccess(&access);
    SPI_finish();
}

}  // namespace fencing::pg
