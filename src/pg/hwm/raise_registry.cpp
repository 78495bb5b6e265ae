#include "pg/hwm/raise_registry.hpp"

extern "C" {
#include "access/xact.h"
#include "common/hashfn.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
}

namespace fencing::pg {
namespace {

struct RaiseEntry {
    uint64 fingerprint;  // hash key: 64-bit hash of kind, relid and identity
    char *identity;      // kind + relid + identity bytes, compared on a hit
    Size identity_len;
    Token token;
    int nest_level;  // the (sub)transaction that made the raise
};

HTAB *raises = nullptr;

void ForgetAll(XactEvent event, void *) {
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
        event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
        event == XACT_EVENT_PREPARE)
        raises = nullptr;  // lived in TopTransactionContext, which goes with it
}

// A subtransaction's raises are rolled back with it, or become its parent's.
void FollowSubtransaction(SubXactEvent event, SubTransactionId, SubTransactionId, void *) {
    bool abort = event == SUBXACT_EVENT_ABORT_SUB;
    if ((!abort && event != SUBXACT_EVENT_COMMIT_SUB) || raises == nullptr)
        return;
    int level = GetCurrentTransactionNestLevel();
    HASH_SEQ_STATUS seq;
    hash_seq_init(&seq, raises);
    for (auto *e = static_cast<RaiseEntry *>(hash_seq_search(&seq)); e != nullptr;
         e = static_cast<RaiseEntry *>(hash_seq_search(&seq))) {
        if (e->nest_level < level)
            continue;
        if (abort)
            hash_search(raises, &e->fingerprint, HASH_REMOVE, nullptr);
        else
            e->nest_level = level - 1;
    }
}

// kind, relid, then the identity bytes: one flat byte string.
char *FullIdentity(HwmKind kind, Oid relid, const char *identity, Size len, Size *full_len) {
    *full_len = 1 + sizeof(Oid) + len;
    char *full = static_cast<char *>(palloc(*full_len));
    full[0] = static_cast<char>(kind);
    memcpy(full + 1, &relid, sizeof(Oid));
    if (len > 0)
        memcpy(full + 1 + sizeof(Oid), identity, len);
    return full;
}

}  // namespace

void RecordRaise(HwmKind kind, Oid relid, const char *identity, Size identity_len, Token token) {
    if (raises == nullptr) {
        HASHCTL ctl;
        ctl.keysize = sizeof(uint64);
        ctl.entrysize = sizeof(RaiseEntry);
        ctl.hcxt = TopTransactionContext;
        raises = hash_create("fencing raises of this transaction", 64, &ctl,
                             HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
    }
    Size full_len;
    char *full = FullIdentity(kind, relid, identity, identity_len, &full_len);
    uint64 fingerprint = hash_bytes_extended(reinterpret_cast<const unsigned char *>(full),
                                             static_cast<int>(full_len), 0);
    bool found;
    auto *e = static_cast<RaiseEntry *>(hash_search(raises, &fingerprint, HASH_ENTER, &found));
    if (found && (e->identity_len != full_len || memcmp(e->identity, full, full_len) != 0)) {
        // A 64-bit collision: keep the first; the other identity then reads
        // as not raised here, which can only refuse, never admit.
        pfree(full);
        return;
    }
    if (!found) {
        e->identity = static_cast<char *>(MemoryContextAlloc(TopTransactionContext, full_len));
        memcpy(e->identity, full, full_len);
        e->identity_len = full_len;
    }
    // A later raise of the same HWM to a higher token replaces the entry.
    if (!found || token >= e->token) {
        e->token = token;
        e->nest_level = GetCurrentTransactionNestLevel();
    }
    pfree(full);
}

bool RaisedHere(HwmKind kind, Oid relid, const char *identity, Size identity_len, Token token) {
    if (raises == nullptr)
        return false;
    Size full_len;
    char *full = FullIdentity(kind, relid, identity, identity_len, &full_len);
    uint64 fingerprint = hash_bytes_extended(reinterpret_cast<const unsigned char *>(full),
                                             static_cast<int>(full_len), 0);
    auto *e = static_cast<RaiseEntry *>(hash_search(raises, &fingerprint, HASH_FIND, nullptr));
    bool raised = e != nullptr && e->identity_len == full_len &&
                  memcmp(e->identity, full, full_len) == 0 && e->token == token;
    pfree(full);
    return raised;
}

void RegisterRaiseRegistryCallbacks() {
    RegisterXactCallback(ForgetAll, nullptr);
    RegisterSubXactCallback(FollowSubtransaction, nullptr);
}

}  // namespace fencing::pg
