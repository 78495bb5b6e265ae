#include "pg/guard/recheck_batch.hpp"

#include "pg/hwm/store.hpp"

extern "C" {
#include "access/xact.h"
#include "executor/tuptable.h"
#include "utils/memutils.h"
}

namespace fencing::pg {

namespace {

uint64 guard_firings = 0;

// The statement whose rechecks are firing: the executor state that fires
// them (the memory context of its trigger slots, which lives exactly as long),
// the table, the command and the guard firings seen. Any change starts a new
// one. A nested statement has its own executor state, so a verdict taken
// among its rows never answers for an outer statement's row that entered the
// index after it.
struct FiringStatement {
    MemoryContext query_cxt = nullptr;
    Oid home_relid = InvalidOid;
    CommandId command = InvalidCommandId;
    uint64 guard_firings = 0;
    int rechecks = 0;
    bool looked = false;
    bool none_stored = false;
};
FiringStatement current;

// The executor state is gone: its address may be reused by another one.
void ForgetStatement(void *arg) {
    if (current.query_cxt == static_cast<MemoryContext>(arg))
        current.query_cxt = nullptr;
}

}  // namespace

void NoteGuardFiring() {
    ++guard_firings;
}

bool StatementStoresNoTombstone(const TriggerData *td, Oid home_relid) {
    if (td->tg_trigslot == nullptr)
        return false;
    MemoryContext cxt = td->tg_trigslot->tts_mcxt;
    CommandId command = GetCurrentCommandId(false);
    if (current.query_cxt != cxt || current.home_relid != home_relid ||
        current.command != command || current.guard_firings != guard_firings) {
        if (current.query_cxt != cxt) {
            auto *cb = static_cast<MemoryContextCallback *>(
                MemoryContextAlloc(cxt, sizeof(MemoryContextCallback)));
            cb->func = ForgetStatement;
            cb->arg = cxt;
            MemoryContextRegisterResetCallback(cxt, cb);
        }
        current = {cxt, home_relid, command, guard_firings, 1, false, false};
        return false;
    }
    if (++current.rechecks < 2)
        return false;
    if (!current.looked) {
        current.none_stored = NoTombstoneStored(home_relid);
        current.looked = true;
    }
    return current.none_stored;
}

}  // namespace fencing::pg
