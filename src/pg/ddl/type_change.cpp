#include "pg/ddl/type_change.hpp"

#include "pg/base/internal_access.hpp"
#include "pg/base/relation_args.hpp"
#include "pg/hwm/store.hpp"
#include "pg/keys/row_key.hpp"
#include "pg/types/token_type.hpp"

extern "C" {
#include "access/table.h"
#include "catalog/pg_type.h"
#include "parser/parse_type.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace fencing::pg {
namespace {

// The type ALTER COLUMN ... TYPE names (InvalidOid when unknown).
Oid AlterTarget(const AlterTableCmd *cmd) {
    auto *def = castNode(ColumnDef, cmd->def);
    return def->typeName != nullptr ? LookupTypeNameOid(nullptr, def->typeName, true)
                                    : InvalidOid;
}

// Whether the ALTER COLUMN ... TYPE's USING (if any) is the column itself,
// maybe cast to the target type: each value is converted as it is, not
// replaced.
bool UsingKeepsValues(const AlterTableCmd *cmd, Oid target) {
    Node *expr = castNode(ColumnDef, cmd->def)->raw_default;
    if (expr != nullptr && IsA(expr, TypeCast)) {
        auto *cast = castNode(TypeCast, expr);
        if (LookupTypeNameOid(nullptr, cast->typeName, true) != target)
            return false;
        expr = cast->arg;
    }
    if (expr == nullptr)
        return true;
    if (!IsA(expr, ColumnRef))
        return false;
    List *fields = castNode(ColumnRef, expr)->fields;
    Node *last = static_cast<Node *>(llast(fields));
    return list_length(fields) == 1 && IsA(last, String) && strcmp(strVal(last), cmd->name) == 0;
}

// The byte width of an integer type's send form (a domain counts as its
// base type), 0 for any other type.
int IntegerWidth(Oid type) {
    switch (getBaseType(type)) {
        case INT2OID:
            return 2;
        case INT4OID:
            return 4;
        case INT8OID:
            return 8;
    }
    return 0;
}

}  // namespace

// Whether ALTER COLUMN ... TYPE of token column attnum of rel keeps every
// row's token: bigint to fencing_token, with no USING or USING the column
// itself (cast to fencing_token or not). Each value converts to the same
// token (a negative one fails the statement), the attnum stays, and the
// guard reads both types alike: the table stays fenced throughout, under the
// ALTER's ACCESS EXCLUSIVE lock.
bool KeepsTokens(Oid rel, AttrNumber attnum, const AlterTableCmd *cmd) {
    Oid target = AlterTarget(cmd);
    return get_atttype(rel, attnum) == INT8OID && OidIsValid(target) &&
           target == FencingTokenTypeOid() && UsingKeepsValues(cmd, target);
}

// ALTER COLUMN ... TYPE of primary key column attnum of row-scope table rel
// whose home has tombstones: an integer column to another integer width,
// keeping the values, rewrites the tombstones' keys in this transaction (the
// table locked first, as the ALTER would lock it), so every deleted key stays
// fenced under the new type. False for any other change (refused).
bool CarryTombstonesThroughKeyType(Oid named, Oid rel, Oid home, AttrNumber attnum,
                                   const AlterTableCmd *cmd) {
    Oid target = AlterTarget(cmd);
    int from = IntegerWidth(get_atttype(rel, attnum)), to = IntegerWidth(target);
    if (from == 0 || to == 0 || !UsingKeepsValues(cmd, target))
        return false;
    LockRelationOid(named, AccessExclusiveLock);
    LockRelationOid(rel, AccessExclusiveLock);
    Relation r = table_open(rel, NoLock);
    PrimaryKey pk;
    int position = 0;
    if (GetPrimaryKey(r, &pk))
        for (int i = 0; i < pk.natts; ++i)
            if (pk.attnums[i] == attnum)
                position = i + 1;
    table_close(r, NoLock);
    if (position == 0 || from == to)
        return position != 0;
    InternalSession access;
    BeginInternal(&access);
    int64 n = RewriteTombstoneIntegerKeys(home, position, from, to);
    EndInternal(&access);
    if (n > 0)
        ereport(NOTICE, (errmsg("%lld tombstones of %s rekeyed for the new type of column \"%s\"",
                                static_cast<long long>(n), RelName(home), cmd->name)));
    return true;
}

}  // namespace fencing::pg
