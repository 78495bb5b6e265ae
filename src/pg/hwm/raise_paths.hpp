// The two ways a shared HWM (a resource's, a table's) is checked and raised:
// the direct path (direct_raise.cpp: the row found, locked and raised in
// place) and the SPI path (spi_raise.cpp: conditional UPDATE, read, first
// INSERT), for tables not of the direct path's shape and for first writes.
#pragma once

#include "core/policy.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/hwm/raise_registry.hpp"
#include "pg/hwm/store.hpp"
#include "pg/hwm/store_shape.hpp"

extern "C" {
#include "storage/lock.h"
}

namespace fencing::pg::hwm {

// Which shared HWM a check is about.
struct SharedHwm {
    HwmKind kind;  // for the raise registry, with relid and identity
    Oid relid;
    const char *identity;
    Size identity_len;
    DirectTable *direct;  // its table's direct path
    const LOCKTAG *tag;   // its HWM lock (pg/hwm/lock.hpp)
    const Datum *key;     // its primary key in that table
    // The namespace whose floor judges the key while it has no row (resource
    // HWMs); nullptr: no floor (a table's HWM is never retired).
    const char *floor_namespace = nullptr;
};

// The admission rule (JudgeOffer), this transaction's raises asked when it
// hinges on them.
bool Admitted(const SharedHwm &h, Token offered, Token hwm, bool strict);
bool RaisedHere(const SharedHwm &h, Token token);

// A raise (or first write): it must commit durably (pg/hwm/durability.hpp), and
// strict mode must remember it: this transaction may write with the token
// again, and nobody else may.
void NoteRaise(const SharedHwm &h, Token token, bool strict);

// Admitted at the HWM this transaction was admitted at under a lock it still
// holds, without a read (h.key unused): asked before SettleDirect.
bool AdmittedFromMemory(const SharedHwm &h, Token offered, bool strict);
// Through the direct path; false when the SPI path must settle it (a first
// write, a table not of the direct path's shape, or one with a trigger).
bool SettleDirect(const SharedHwm &h, Token offered, bool strict, HwmVerdict *verdict);

// The SPI path's statements for one HWM table, with their arguments.
struct SpiRaise {
    InternalStatement *raise;
    Datum *raise_args;
    InternalStatement *read;
    Datum *read_args;
    InternalStatement *first;
    Datum *first_args;
    InternalStatement *lock;  // locks the row (SELECT ... FOR NO KEY UPDATE), read_args
};
HwmVerdict CheckAndRaiseViaSpi(const SharedHwm &h, const SpiRaise &spi, Token offered, bool strict);

// Under session_replication_role = replica the state tables' replica trigger
// (fencing.replica_keep_highest) makes an INSERT write the row itself, and
// the statement then reports no row: a first HWM written that way cannot be
// told from a refusal by the row count. Such a session's commit is made
// durable whenever it ran a statement that may raise.
bool ReplicaTriggerMayWrite();

}  // namespace fencing::pg::hwm
