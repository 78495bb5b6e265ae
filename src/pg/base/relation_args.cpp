#include "pg/base/relation_args.hpp"

extern "C" {
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

namespace fencing::pg {

const char *RelName(Oid relid) {
    return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
                                      get_rel_name(relid));
}

Oid ExistingRelationArg(FunctionCallInfo fcinfo, int n, const char *argname) {
    if (PG_ARGISNULL(n))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be NULL", argname)));
    Oid relid = PG_GETARG_OID(n);
    if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("relation with OID %u does not exist", relid)));
    return relid;
}

}  // namespace fencing::pg
