// A policy change of a protected table (fencing_protect() on a table that is
// protected already: another token column, scope, resource column or
// namespace) must not lower what any write is judged by. Each transition
// either carries every HWM across (row tokens, tombstones, floors, resource
// and table HWMs: raised where the new policy looks, never lowered) or is
// refused with 55000 naming the safe path; lowering on purpose stays
// fencing_reset(). The table of transitions is in docs/usage.md
// ("Changing a policy").
#pragma once

#include "pg/catalog/policy_store.hpp"

namespace fencing::pg {

// Whether going from from to to changes what writes are judged by (token
// column, scope, resource column or namespace); on_stale, strict and
// require_token do not.
bool PolicyChangeMovesHwms(const ProtectedRow &from, const ProtectedRow &to);

// Carries the state from's writes were judged by to where to's writes will
// be judged, or raises 55000. The caller holds the locks that keep every
// writer and raiser of the table out until it commits: the policy lock
// (LockAttachExclusive, which fencing_advance() shares) and
// ShareRowExclusiveLock on the table and each of its partitions; this takes
// what the shared HWMs need (the table HWM's lock, a SHARE lock on the
// resource HWMs when from is in resource scope). Not inside an internal
// session: it opens its own.
void CarryHwmsAcrossPolicy(const ProtectedRow &from, const ProtectedRow &to);

}  // namespace fencing::pg
