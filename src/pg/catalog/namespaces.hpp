// Resource namespaces: who owns each one.
//
// Resource-scope HWMs are shared by every table protected in the same
// namespace, so a table in a namespace can raise (or, through a reset, lower)
// the HWMs every other table in it is judged by. A namespace therefore has an
// owner role, and
//   * a table joins a namespace only when the table's owner has the privileges
//     of the namespace's owner, whoever calls fencing_protect() (a superuser
//     included);
//   * only a role with the owner's privileges may reset the namespace's HWMs,
//     directly or through one of its tables.
// The owner is kept by role OID (a regrole column, so renames do not matter and
// a dump restores it by name). The first table protected in an unowned
// namespace claims it for the table's owner. 'default' is never claimed: it
// always belongs to the extension's owner, so nobody can squat it.
#pragma once

#include "pg/base/pg.hpp"

namespace fencing::pg {

inline constexpr const char *kDefaultNamespace = "default";

// The namespace argument n of a resource-named function: 22004 when NULL.
char *NamespaceArg(FunctionCallInfo fcinfo, int n);

// All four run inside an internal session (pg/base/internal_access.hpp).
//
// The namespace's owner; InvalidOid when it is unclaimed (or its role is gone).
Oid NamespaceOwner(const char *name_space);
// Lets a table owned by table_owner join the namespace, claiming it when it is
// unclaimed; raises 42501 naming the owner otherwise.
void JoinNamespace(const char *name_space, Oid table_owner);
// Raises 42501 unless role has the privileges of the namespace's owner.
void RequireNamespaceOwner(const char *name_space, Oid role, const char *action);
// Raises 42501 unless caller has the privileges of the namespace's owner; an
// unclaimed namespace is claimed for the caller first (as fencing_protect
// claims one for a table's owner). 'default' belongs to the extension's owner.
// For the functions that write a namespace's state directly (leases,
// fencing_resource_advance).
void RequireNamespaceWriter(const char *name_space, Oid caller, const char *action);

}  // namespace fencing::pg
