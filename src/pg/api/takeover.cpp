// See pg/api/takeover.hpp.
#include "pg/api/takeover.hpp"

#include "pg/base/errors.hpp"
#include "pg/hwm/lock.hpp"
#include "pg/hwm/store.hpp"
#include "pg/hwm/writers.hpp"
#include "pg/base/internal_access.hpp"
#include "pg/base/compat.hpp"

extern "C" {
#include <signal.h>

#include "access/subtrans.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/elog.h"
#include "utils/guc.h"
}

namespace fencing::pg {
namespace {

bool takeover_setting = true;

// Why a backend was ended, by its PGPROC number: written by the acquire
// before its SIGTERM, read by the ended backend when it reports its FATAL.
constexpr int kNameBytes = 64;
struct TakeoverReason {
    int pid;  // the ended backend; 0: free
    int by_pid;
    int64 token;
    char name_space[kNameBytes];
    char resource[kNameBytes];
};
struct TakeoverShared {
    slock_t mutex;
    int slots;
    TakeoverReason reasons[FLEXIBLE_ARRAY_MEMBER];
};
TakeoverShared *shared = nullptr;
shmem_request_hook_type previous_request_hook = nullptr;
shmem_startup_hook_type previous_startup_hook = nullptr;
emit_log_hook_type previous_emit_log_hook = nullptr;

int ProcSlots() {
    return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

Size SharedSize() {
    return add_size(offsetof(TakeoverShared, reasons),
                    mul_size(sizeof(TakeoverReason), static_cast<Size>(ProcSlots())));
}

void RequestSharedMemory() {
    if (previous_request_hook != nullptr)
        previous_request_hook();
    RequestAddinShmemSpace(SharedSize());
}

void StartSharedMemory() {
    if (previous_startup_hook != nullptr)
        previous_startup_hook();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    bool found;
    shared = static_cast<TakeoverShared *>(ShmemInitStruct("fencing takeover", SharedSize(), &found));
    if (!found) {
        memset(static_cast<void *>(shared), 0, SharedSize());
        SpinLockInit(&shared->mutex);
        shared->slots = ProcSlots();
    }
    LWLockRelease(AddinShmemInitLock);
}

void Truncated(char *to, const char *from) {
    strlcpy(to, from, kNameBytes);
}

// proc's reason slot, nullptr without shared memory.
TakeoverReason *SlotOf(const PGPROC *proc) {
    if (shared == nullptr || proc == nullptr)
        return nullptr;
    int slot = static_cast<int>(proc - ProcGlobal->allProcs);
    return slot >= 0 && slot < shared->slots ? &shared->reasons[slot] : nullptr;
}

void NoteReason(PGPROC *proc, const char *name_space, const char *resource, Token token) {
    TakeoverReason *r = SlotOf(proc);
    if (r == nullptr)
        return;
    SpinLockAcquire(&shared->mutex);
    r->pid = proc->pid;
    r->by_pid = MyProcPid;
    r->token = token;
    Truncated(r->name_space, name_space);
    Truncated(r->resource, resource);
    SpinLockRelease(&shared->mutex);
}

// Takes back a reason noted for a backend that was not signalled after all.
void ForgetReason(PGPROC *proc) {
    TakeoverReason *r = SlotOf(proc);
    if (r == nullptr)
        return;
    SpinLockAcquire(&shared->mutex);
    if (r->by_pid == MyProcPid)
        r->pid = 0;
    SpinLockRelease(&shared->mutex);
}

// The reason this backend was ended, when an acquire ended it.
bool MyReason(TakeoverReason *out) {
    TakeoverReason *r = SlotOf(MyProc);
    if (r == nullptr)
        return false;
    SpinLockAcquire(&shared->mutex);
    bool mine = r->pid == MyProcPid;
    if (mine) {
        *out = *r;
        r->pid = 0;
    }
    SpinLockRelease(&shared->mutex);
    return mine;
}

// The ended backend's FATAL ("terminating connection due to administrator
// command", 57P01) tells its client why: TF003 and the lease.
void ExplainTakeover(ErrorData *edata) {
    if (edata->elevel == FATAL && edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN) {
        TakeoverReason r;
        if (MyReason(&r)) {
            edata->sqlerrcode = ERRCODE_FENCING_LEASE_TAKEN_OVER;
            edata->message = psprintf(
                "terminating connection: the lease of resource %s (namespace %s) was taken "
                "over",
                quote_literal_cstr(r.resource), quote_literal_cstr(r.name_space));
            edata->detail = psprintf(
                "This session's transaction wrote with token " INT64_FORMAT
                " after its lease ended; the acquire in backend %d ended the session so that a "
                "new token could be issued. Writes not committed by then were rolled back.",
                r.token, r.by_pid);
            edata->hint = pstrdup(
                "Renew the lease before it expires; re-acquire it to get a new token, re-read "
                "the data, then write.");
        }
    }
    if (previous_emit_log_hook != nullptr)
        previous_emit_log_hook(edata);
}

// The backend running vxid, when it still runs it: a prepared transaction's
// vxid names the backend slot that prepared it, which may be running another
// transaction since, or none.
PGPROC *BackendRunning(const VirtualTransactionId &vxid) {
    PGPROC *proc = ProcOfVirtualTransaction(vxid);
    if (proc == nullptr || proc->pid == 0 || ProcLocalTransactionId(proc) != vxid.localTransactionId)
        return nullptr;
    return proc;
}

bool MaySignal(PGPROC *proc) {
    if (proc == nullptr || proc == MyProc)
        return false;
    // As pg_terminate_backend: a superuser's backend only for a superuser,
    // and a backend with no role (a background worker connected without
    // one runs as the bootstrap superuser) is treated as a superuser's.
    return (OidIsValid(proc->roleId) && !superuser_arg(proc->roleId)) || superuser();
}

}  // namespace

void DefineTakeoverSettings() {
    DefineCustomBoolVariable(
        "fencing.takeover",
        "Lets fencing_acquire end the open transactions of an ended lease's holder.",
        "An acquire that replaces an expired or released lease ends the backends still writing "
        "with its token (their transactions roll back), instead of waiting for them.",
        &takeover_setting, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
}

void RegisterTakeoverHooks() {
    previous_emit_log_hook = emit_log_hook;
    emit_log_hook = ExplainTakeover;
    if (!process_shared_preload_libraries_in_progress)
        return;
    previous_request_hook = shmem_request_hook;
    shmem_request_hook = RequestSharedMemory;
    previous_startup_hook = shmem_startup_hook;
    shmem_startup_hook = StartSharedMemory;
}

void ResourceRaiseLockTag(LOCKTAG *tag, const char *name_space, const char *resource) {
    Size ns_len = strlen(name_space);
    Size identity_len = ns_len + 1 + strlen(resource);
    char *identity = static_cast<char *>(palloc(identity_len + 1));
    memcpy(identity, name_space, ns_len + 1);
    strcpy(identity + ns_len + 1, resource);
    ResourceHwmLockTag(tag, identity, identity_len);
}

namespace {

// Ends proc's transaction (see the header); false when it may not be ended.
// running: whether proc still runs the transaction, looked at again just
// before the signal (as narrow a window as pg_terminate_backend's between its
// check and its kill()).
bool EndOne(PGPROC *proc, bool (*running)(PGPROC *, const void *), const void *which,
            const char *name_space, const char *resource, Token ended_token, List **signalled) {
    if (!MaySignal(proc))
        return false;
    int pid = proc->pid;
    if (list_member_int(*signalled, pid))
        return true;  // still rolling back
    NoteReason(proc, name_space, resource, ended_token);
    *signalled = lappend_int(*signalled, pid);
    if (!running(proc, which) || kill(pid, SIGTERM) != 0) {
        ForgetReason(proc);
        return true;
    }
    ereport(LOG, (errmsg("fencing: ending backend %d: it writes with token " INT64_FORMAT
                         " of the ended lease of resource %s (namespace %s)",
                         pid, ended_token, quote_literal_cstr(resource),
                         quote_literal_cstr(name_space))));
    return true;
}

bool RunsVxid(PGPROC *proc, const void *which) {
    return BackendRunning(*static_cast<const VirtualTransactionId *>(which)) == proc;
}

bool RunsXid(PGPROC *proc, const void *which) {
    return proc->pid != 0 && proc->xid == *static_cast<const TransactionId *>(which);
}

}  // namespace

int EndWritersOfEndedLease(const char *name_space, const char *resource, Token ended_token,
                           List **signalled, bool *row_locked) {
    LOCKTAG tag;
    ResourceRaiseLockTag(&tag, name_space, resource);
    // The holders first, then the HWM: a holder's token is the HWM it was
    // admitted at, committed before it was admitted (a raise in flight is
    // waited for), and HWMs only rise, so a holder whose token is not
    // ended_token shows an HWM above it here. A row locker holds the row
    // version that shows the HWM it was admitted at.
    int count = 0;
    VirtualTransactionId *vxids = GetLockConflicts(&tag, ExclusiveLock, &count);
    Token hwm = 0;
    TransactionId locker = InvalidTransactionId;
    bool found = ResourceHwmLocker(name_space, resource, &hwm, &locker);
    *row_locked = TransactionIdIsValid(locker);
    // Under REPEATABLE READ the lease was read with the transaction's
    // snapshot, maybe older than a writer's admission: nothing is ended.
    if (!takeover_setting || ended_token <= 0 || IsolationUsesXactSnapshot() || !found ||
        hwm != ended_token)
        return 0;
    int ending = 0;
    for (int i = 0; i < count; ++i) {
        if (EndOne(BackendRunning(vxids[i]), RunsVxid, &vxids[i], name_space, resource,
                   ended_token, signalled))
            ++ending;
    }
    if (TransactionIdIsValid(locker)) {
        TransactionId top = SubTransGetTopmostTransaction(locker);
        int pid = BackendXidGetPid(top);
        PGPROC *proc = pid != 0 ? BackendPidGetProc(pid) : nullptr;
        if (proc != nullptr &&
            EndOne(proc, RunsXid, &top, name_space, resource, ended_token, signalled))
            ++ending;
    }
    return ending;
}

}  // namespace fencing::pg
