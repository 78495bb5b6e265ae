#include "pg/base/relation_args.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include "catalog/objectaddress.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

namespace fencing::pg {
namespace {

void ReportRelationAcl(AclResult result, Oid relid) {
    aclcheck_error(result, get_relkind_objtype(get_rel_relkind(relid)), get_rel_name(relid));
}

}  // namespace

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

void RequireRelationOwner(Oid relid) {
    if (!OwnsRelation(relid, GetUserId()))
        ReportRelationAcl(ACLCHECK_NOT_OWNER, relid);
}

void RequireRelationPrivilege(Oid relid, AclMode mode, bool any_column) {
    Oid user = GetUserId();
    if (pg_class_aclcheck(relid, user, mode) == ACLCHECK_OK ||
        (any_column && pg_attribute_aclcheck_all(relid, user, mode, ACLMASK_ANY) == ACLCHECK_OK))
        return;
    ReportRelationAcl(ACLCHECK_NO_PRIV, relid);
}

TriggerData *TriggerCallData(FunctionCallInfo fcinfo, const char *function) {
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("%s can only be called as a trigger", function)));
    return reinterpret_cast<TriggerData *>(fcinfo->context);
}

}  // namespace fencing::pg
