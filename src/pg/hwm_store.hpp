// Durable high-water marks in the extension's own WAL-logged tables
// (schema fencing). Every check-and-raise is one atomic step: a conditional
// UPDATE, or an INSERT ... ON CONFLICT for a first write; the HWM row stays
// locked by the writer until it commits, so a lower concurrent writer waits
// and is then judged against the committed value.
#pragma once

#include "core/policy.hpp"
#include "pg/pg.hpp"

namespace fencing::pg {

struct HwmVerdict {
    bool admitted;
    Token hwm;  // the HWM the offered token was judged against (when !admitted)
};

// Atomic check-and-raise of a shared HWM. Manage their own SPI connection.
HwmVerdict CheckAndRaiseResource(const char *name_space, const char *resource, Token offered,
                                 bool strict);
HwmVerdict CheckAndRaiseTable(Oid home_relid, Token offered, bool strict);
// Tombstones: the HWM a deleted row leaves behind, keyed by its primary key.
// The caller is inside an internal session (pg/internal_access.hpp).
bool LookupTombstone(Oid home_relid, Datum key, Token *hwm);
void RaiseTombstone(Oid home_relid, Datum key, Token hwm);

}  // namespace fencing::pg
