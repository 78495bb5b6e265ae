#include "pg/keys/row_key.hpp"

#include "pg/types/token_type.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/keys/tombstone_key.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "executor/tuptable.h"
#include "storage/lmgr.h"
#include "utils/snapmgr.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/rls.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "access/stratnum.h"
}

namespace fencing::pg {
namespace {

// False when a key column is NULL: BEFORE triggers run before NOT NULL is
// checked, and such a row has no key (the constraint will reject it).
bool KeyOfRow(Relation rel, const PrimaryKey &pk, HeapTuple row, Datum *key) {
    TupleDesc desc = RelationGetDescr(rel);
    Oid types[32];
    Datum values[32];
    for (int i = 0; i < pk.natts; ++i) {
        bool isnull;
        values[i] = heap_getattr(row, pk.attnums[i], desc, &isnull);
        if (isnull)
            return false;
        types[i] = TupleDescAttr(desc, pk.attnums[i] - 1)->atttypid;
    }
    *key = TombstoneKey(pk.natts, types, values);
    return true;
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
        // A polymorphic opclass (enum_ops: anyenum) registers its operators
        // for the pseudo-type; the parameter takes the column's own type.
        Oid argtype = IsPolymorphicType(opcintype) ? att->atttypid : opcintype;
        Oid eqop = get_opfamily_member(opfamily, opcintype, opcintype, BTEqualStrategyNumber);
        if (!OidIsValid(eqop))
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_FUNCTION),
                            errmsg("primary key column \"%s\" has no equality operator in its "
                                   "operator class",
                                   NameStr(att->attname))));
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
    Oid index = PrimaryKeyIndex(rel);
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

bool CallerMaySeeColumns(Relation rel, Oid home_relid, const AttrNumber *attnums, int natts) {
    // PostgreSQL's own rule for key values in unique-violation details
    // (BuildIndexValueDescription): nothing under RLS; otherwise SELECT on
    // the table or on every column. Judged on the protected table the caller
    // wrote to (a partition's columns are matched by name).
    if (check_enable_rls(home_relid, InvalidOid, true) == RLS_ENABLED)
        return false;
    Oid user = GetUserId();
    if (pg_class_aclcheck(home_relid, user, ACL_SELECT) == ACLCHECK_OK)
        return true;
    TupleDesc desc = RelationGetDescr(rel);
    for (int i = 0; i < natts; ++i) {
        AttrNumber home_attnum =
            get_attnum(home_relid, NameStr(TupleDescAttr(desc, attnums[i] - 1)->attname));
        if (home_attnum == InvalidAttrNumber ||
            pg_attribute_aclcheck(home_relid, home_attnum, user, ACL_SELECT) != ACLCHECK_OK)
            return false;
    }
    return true;
}

const char *RowKeyDescription(Relation rel, Oid home_relid, HeapTuple row) {
    StringInfoData buf;
    initStringInfo(&buf);
    PrimaryKey pk;
    bool has_pk = GetPrimaryKey(rel, &pk);
    if (has_pk && !CallerMaySeeColumns(rel, home_relid, pk.attnums, pk.natts))
        return "a row whose key you may not read";
    if (!has_pk) {
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

bool RowKeyOf(Relation rel, HeapTuple row, Datum *key) {
    PrimaryKey pk;
    return GetPrimaryKey(rel, &pk) && KeyOfRow(rel, pk, row, key);
}

}  // namespace fencing::pg
