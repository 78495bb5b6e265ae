// pg/ddl owns keeping fencing in step with DDL: checks before a command, the
// hooks after it, and tombstones for the rows DDL takes out of a fenced
// table (see README.md).
//
// DDL that would orphan, reset or bypass a high-water mark is refused (or its
// state is carried over) here. Two kinds of checks:
//
//  * What a table must be to be fenced (RequireFenceable): logged, no plain
//    inheritance into or out of a fenced table, token / resource / row-scope
//    key columns not computed after BEFORE triggers, resource column distinct
//    from the token column. Checked by fencing_protect() and, after every
//    CREATE/ALTER TABLE, on the table's fenced home (CheckAfterTableDdl), so
//    auto-protection, SET UNLOGGED, INHERIT, ADD GENERATED ... fail and roll
//    back the DDL.
//  * What a command is about to change (the ddl_command_start event trigger
//    fencing.ddl_check_start): a type change of
//    the token or resource column, of a row-scope key that has tombstones,
//    dropping such a key, renaming an enum label that keys fencing state;
//    ATTACH / DETACH PARTITION, whose fencing state is carried over; and the
//    rows a DETACH or DROP takes out of a row-scope fenced table, which leave
//    tombstones first (pg/ddl/partition_removal.hpp).
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "access/attnum.h"
}

namespace fencing::pg {

// Raises unless relid can be fenced with this token column (and resource
// column in resource scope; 0 otherwise; row_scope: its primary key too).
// Catalog reads only.
void RequireFenceable(Oid relid, AttrNumber token_attnum, AttrNumber resource_attnum,
                      bool row_scope);

// After a CREATE/ALTER TABLE of relid has been handled by the DDL hook:
// raises if relid, or the fenced table it belongs to, may not be fenced as it
// now is. Inside an internal session.
void CheckAfterTableDdl(Oid relid);

}  // namespace fencing::pg
