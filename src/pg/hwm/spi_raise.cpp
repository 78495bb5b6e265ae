// The SPI path of a shared HWM's check and raise: a first write, or an HWM
// table not of the direct path's shape or with an UPDATE trigger.
#include "pg/hwm/durability.hpp"
#include "pg/hwm/lock.hpp"
#include "pg/hwm/raise_paths.hpp"
#include "pg/hwm/store_sql.hpp"
#include "pg/hwm/writers.hpp"

extern "C" {
#include "miscadmin.h"
}

namespace fencing::pg::hwm {
namespace {

// Such a raise holds the HWM lock exclusively, but not while waiting for
// another raise of the row still in flight: its SPI statements would wait for
// that raiser, whose transaction may ask for the lock again (a write at the
// HWM it raised). A table of the direct path's shape is probed for writers
// in flight (waited for without the lock); any other is locked through SQL
// first: the row lock is waited for, and then held, before the HWM lock is
// asked for, so the raise's UPDATE finds the row locked by itself. Inside
// the internal session.
void LockForSpiRaise(const SharedHwm &h, const SpiRaise &spi) {
    DirectAccess a;
    if (!OpenDirectHeap(h.direct, AccessShareLock, h.key, &a)) {
        Run(spi.lock, spi.read_args);
        LockHwmExclusive(h.tag);
        return;
    }
    LockWhenNoWriter(&a, h.tag, LockHwmExclusive, UnlockHwmExclusive);
    CloseDirect(&a);
}

// A key with no row yet: its namespace's floor (read with the latest
// snapshot, now that the row was found missing) judges it with the rule a
// row would. True when that settles it: refused, or admitted without a write
// (strict mode's own raise at the floor). A floor of 0 judges nothing.
bool SettledAtFloor(const SharedHwm &h, Token offered, bool strict, HwmVerdict *verdict) {
    if (h.floor_namespace == nullptr)
        return false;
    Token floor = ResourceFloor(h.floor_namespace);
    if (floor <= 0)
        return false;
    switch (JudgeOffer(offered, floor, strict)) {
        case Admission::kAdmitted:
            return false;
        case Admission::kIfRaisedHere:
            if (RaisedHere(h, offered)) {
                *verdict = {true, offered};
                return true;
            }
            break;
        case Admission::kRefused:
            break;
    }
    *verdict = {false, floor, true};
    return true;
}

// One round of CheckAndRaiseViaSpi; true when settled.
//   1. conditional UPDATE: one row means admitted, and the row stays locked;
//   2. otherwise read: a row that does not admit the token means stale;
//   3. no row yet: INSERT ... ON CONFLICT DO NOTHING; one row means admitted.
bool SettledViaSpi(const SharedHwm &h, const SpiRaise &spi, Token offered, bool strict,
                   HwmVerdict *verdict) {
    if (Run(spi.raise, spi.raise_args) > 0) {
        NoteRaise(h, offered, strict);
        *verdict = {true, offered};
        return true;
    }
    Run(spi.read, spi.read_args);
    Token hwm;
    if (FirstInt8(&hwm)) {
        // An admitting value goes round again to the conditional UPDATE,
        // which locks the row: admitting on a read alone would let a raise
        // commit in between (read, check, write). Strict, equal, and raised
        // by this transaction, which holds the row's lock since: admitted
        // without a write.
        Admission judged = JudgeOffer(offered, hwm, strict);
        if (judged == Admission::kAdmitted)
            return false;
        bool admitted = judged == Admission::kIfRaisedHere && RaisedHere(h, offered);
        *verdict = admitted ? HwmVerdict{true, offered} : HwmVerdict{false, hwm};
        return true;
    }
    if (SettledAtFloor(h, offered, strict, verdict))
        return true;
    if (Run(spi.first, spi.first_args) > 0) {
        NoteRaise(h, offered, strict);
        *verdict = {true, offered};
        return true;
    }
    return false;
}

}  // namespace

bool ReplicaTriggerMayWrite() {
    return SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA;
}

// Steps 2 and 3 of a round can lose a race with a concurrent first write;
// then the next round runs against the row that writer committed. In
// REPEATABLE READ such a race raises a serialization failure inside step 3
// instead.
HwmVerdict CheckAndRaiseViaSpi(const SharedHwm &h, const SpiRaise &spi, Token offered,
                               bool strict) {
    if (ReplicaTriggerMayWrite())
        NoteHwmRaised();
    InternalSession access;
    BeginInternal(&access);
    LockForSpiRaise(h, spi);
    HwmVerdict verdict = {false, 0};
    bool settled = false;
    for (int attempt = 0; attempt < 8 && !settled; ++attempt)
        settled = SettledViaSpi(h, spi, offered, strict, &verdict);
    EndInternal(&access);
    UnlockHwmExclusive(h.tag);
    if (settled)
        return verdict;
    ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                    errmsg("could not settle the fencing high-water mark under concurrent "
                           "first writes"),
                    errhint("Retry the transaction.")));
    pg_unreachable();
}

}  // namespace fencing::pg::hwm
