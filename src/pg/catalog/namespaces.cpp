#include "pg/catalog/namespaces.hpp"

#include "pg/base/internal_access.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

namespace fencing::pg {
namespace {

// Whether the owner is kept as a regrole. Before ALTER EXTENSION UPDATE the
// installed SQL may still keep a role name there, and this library reads
// either.
bool OwnerKeptByOid() {
    Oid nsp = ExtensionSchemaOid(false);
    Oid rel = get_relname_relid("resource_namespace", nsp);
    AttrNumber attnum = get_attnum(rel, "owner");
    return attnum != InvalidAttrNumber && get_atttype(rel, attnum) == REGROLEOID;
}

// The owner lookups, prepared once per backend; [by_oid][lock].
InternalStatement owner_read[2][2] = {
    {{"SELECT owner::pg_catalog.text FROM fencing.resource_namespace"
      " WHERE name OPERATOR(pg_catalog.=) $1",
      1,
      {TEXTOID},
      nullptr},
     {"SELECT owner::pg_catalog.text FROM fencing.resource_namespace"
      " WHERE name OPERATOR(pg_catalog.=) $1 FOR UPDATE",
      1,
      {TEXTOID},
      nullptr}},
    {{"SELECT owner::pg_catalog.oid FROM fencing.resource_namespace"
      " WHERE name OPERATOR(pg_catalog.=) $1",
      1,
      {TEXTOID},
      nullptr},
     {"SELECT owner::pg_catalog.oid FROM fencing.resource_namespace"
      " WHERE name OPERATOR(pg_catalog.=) $1 FOR UPDATE",
      1,
      {TEXTOID},
      nullptr}}};
// The first claim of a namespace; [by_oid].
InternalStatement owner_claim[2] = {
    {"INSERT INTO fencing.resource_namespace (name, owner) VALUES ($1, $2)"
     " ON CONFLICT (name) DO NOTHING",
     2,
     {TEXTOID, NAMEOID},
     nullptr},
    {"INSERT INTO fencing.resource_namespace (name, owner) VALUES ($1, $2)"
     " ON CONFLICT (name) DO NOTHING",
     2,
     {TEXTOID, REGROLEOID},
     nullptr}};

// Whether the namespace has no owner row but holds HWMs or leases: they came
// from elsewhere (logical replication from a publisher that claimed it at run
// time, where fencing.resource_namespace does not travel, or a partial
// restore). [with_leases]: the installed SQL may predate fencing.lease.
#define FENCING_STATE_WITHOUT_OWNER                                     \
    "SELECT 1 WHERE NOT EXISTS (SELECT FROM fencing.resource_namespace" \
    "                            WHERE name OPERATOR(pg_catalog.=) $1)" \
    "   AND (EXISTS (SELECT FROM fencing.resource_hwm"                  \
    "                 WHERE namespace OPERATOR(pg_catalog.=) $1)"
InternalStatement state_without_owner[2] = {
    {FENCING_STATE_WITHOUT_OWNER ")", 1, {TEXTOID}, nullptr},
    {FENCING_STATE_WITHOUT_OWNER
     "        OR EXISTS (SELECT FROM fencing.lease WHERE namespace OPERATOR(pg_catalog.=) $1))",
     1,
     {TEXTOID},
     nullptr}};
#undef FENCING_STATE_WITHOUT_OWNER

// A floor is such state too: every HWM of the namespace may have been
// retired into it. Only when the installed SQL has fencing.resource_floor.
InternalStatement floor_without_owner = {
    "SELECT 1 WHERE NOT EXISTS (SELECT FROM fencing.resource_namespace"
    "                            WHERE name OPERATOR(pg_catalog.=) $1)"
    "   AND EXISTS (SELECT FROM fencing.resource_floor WHERE namespace OPERATOR(pg_catalog.=) $1)",
    1,
    {TEXTOID},
    nullptr};

bool HasLeaseTable() {
    return OidIsValid(get_relname_relid("lease", ExtensionSchemaOid(false)));
}

bool HasFloorTable() {
    return OidIsValid(get_relname_relid("resource_floor", ExtensionSchemaOid(false)));
}

// Whether the namespace has no owner row but holds state (above).
bool StateWithoutOwner(const Datum *ns) {
    return RunInternalStatement(&state_without_owner[HasLeaseTable()], ns, nullptr) > 0 ||
           (HasFloorTable() && RunInternalStatement(&floor_without_owner, ns, nullptr) > 0);
}

Oid StoredOwner(const char *name_space, bool lock) {
    Datum values[] = {CStringGetTextDatum(name_space)};
    bool by_oid = OwnerKeptByOid();
    if (RunInternalStatement(&owner_read[by_oid][lock], values, nullptr) == 0)
        return InvalidOid;
    bool isnull;
    Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    if (isnull)
        return InvalidOid;
    Oid owner = by_oid ? DatumGetObjectId(d) : get_role_oid(TextDatumGetCString(d), true);
    // A dropped role's OID may linger in a regrole column: unclaimed.
    if (!OidIsValid(owner) || !SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(owner)))
        return InvalidOid;
    return owner;
}

const char *RoleName(Oid role) {
    const char *name = GetUserNameFromId(role, true);
    return name != nullptr ? quote_identifier(name) : psprintf("with OID %u", role);
}

}  // namespace

char *NamespaceArg(FunctionCallInfo fcinfo, int n) {
    if (PG_ARGISNULL(n))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("namespace must not be NULL"),
                 errhint("Omit the argument to use namespace '%s'.", kDefaultNamespace)));
    char *name = text_to_cstring(PG_GETARG_TEXT_PP(n));
    if (name[0] == '\0')
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("namespace must not be empty")));
    return name;
}

Oid NamespaceOwner(const char *name_space) {
    if (strcmp(name_space, kDefaultNamespace) == 0)
        return ExtensionOwner();
    return StoredOwner(name_space, false);
}

namespace {

// Claims an unclaimed namespace for table_owner, then reads its owner under
// a row lock, so two first claims cannot both win.
Oid ClaimNamespace(const char *name_space, Oid table_owner) {
    // Claiming a namespace whose state came without its owner would let the
    // first role to ask reset that state: only a superuser may give it an
    // owner then.
    Datum ns[] = {CStringGetTextDatum(name_space)};
    if (!superuser_arg(table_owner) && StateWithoutOwner(ns))
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("resource namespace %s has no owner here but holds high-water marks "
                               "or leases",
                               quote_literal_cstr(name_space)),
                        errdetail("They came without their owner (logical replication or a partial "
                                  "restore); claiming the namespace would let %s reset them.",
                                  RoleName(table_owner)),
                        errhint("A superuser can give it its owner: INSERT INTO "
                                "fencing.resource_namespace (name, owner) VALUES (%s, '<role>').",
                                quote_literal_cstr(name_space))));
    bool by_oid = OwnerKeptByOid();
    NameData owner_name;
    namestrcpy(&owner_name, GetUserNameFromId(table_owner, false));
    Datum values[] = {CStringGetTextDatum(name_space),
                      by_oid ? ObjectIdGetDatum(table_owner) : NameGetDatum(&owner_name)};
    RunInternalStatement(&owner_claim[by_oid], values, nullptr);
    Oid owner = StoredOwner(name_space, true);
    // Its role was dropped: only a role with superuser rights may take it
    // over, explicitly, since tables of the old owner may be in it.
    if (!OidIsValid(owner))
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("resource namespace %s belongs to a role that no longer exists",
                               quote_literal_cstr(name_space)),
                        errhint("A superuser can give it a new owner: UPDATE "
                                "fencing.resource_namespace SET owner = '<role>' WHERE name = %s.",
                                quote_literal_cstr(name_space))));
    return owner;
}

}  // namespace

void JoinNamespace(const char *name_space, Oid table_owner) {
    Oid owner = strcmp(name_space, kDefaultNamespace) == 0
                    ? ExtensionOwner()
                    : ClaimNamespace(name_space, table_owner);
    if (!has_privs_of_role(table_owner, owner))
        ereport(
            ERROR,
            (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
             errmsg("resource namespace %s belongs to role %s", quote_literal_cstr(name_space),
                    RoleName(owner)),
             errdetail("The table's owner %s is not a member of that role.", RoleName(table_owner)),
             strcmp(name_space, kDefaultNamespace) == 0
                 ? errhint("Namespace '%s' is reserved for the extension's owner: name a "
                           "namespace of your own with resource_namespace => '...'.",
                           kDefaultNamespace)
                 : errhint("Only tables owned by members of the namespace's owner may join "
                           "it; choose another resource_namespace.")));
}

void RequireNamespaceOwner(const char *name_space, Oid role, const char *action) {
    Oid owner = NamespaceOwner(name_space);
    if (OidIsValid(owner) ? has_privs_of_role(role, owner) : superuser_arg(role))
        return;
    ereport(
        ERROR,
        (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
         errmsg("only the owner of resource namespace %s may %s", quote_literal_cstr(name_space),
                action),
         OidIsValid(owner) ? errdetail("The namespace belongs to role %s.", RoleName(owner)) : 0));
}

void RequireNamespaceWriter(const char *name_space, Oid caller, const char *action) {
    if (strcmp(name_space, kDefaultNamespace) != 0 && !OidIsValid(NamespaceOwner(name_space))) {
        // Claims it for the caller (or, when a concurrent claim won, checks
        // the caller against its owner under the row lock).
        JoinNamespace(name_space, caller);
        return;
    }
    RequireNamespaceOwner(name_space, caller, action);
}

}  // namespace fencing::pg
