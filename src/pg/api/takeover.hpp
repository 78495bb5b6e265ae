// Takeover: an acquire that replaces an ended lease (expired or released)
// ends the open transactions still writing with that lease's token, so that
// it issues its own token within its wait (STONITH: the resource excludes the
// expired holder).
//
// Raising a resource's HWM takes its HWM lock in exclusive mode
// (pg/hwm/lock.hpp), which waits for every writer admitted at the current
// HWM: each holds the lock in share mode to the end of its transaction. While
// the committed HWM equals the ended lease's token, every such writer was
// admitted with that token, so it writes for the ended lease. With
// fencing.takeover on (the default), the acquire ends those backends as
// pg_terminate_backend() does (SIGTERM): their transactions roll back, and
// their clients get FATAL TF003 "lease taken over" (57P01 without
// shared_preload_libraries; see docs/reference.md). Nothing else is ever
// ended: no writer of another resource, none admitted with another token (one
// from fencing_resource_advance or another lock service), no prepared
// transaction (it has no backend), and a superuser's backend only by a
// superuser's acquire. A transaction already inside its commit record cannot
// be undone: it commits, and the acquire waits for it within its wait.
#pragma once

#include "core/token.hpp"
#include "pg/base/pg.hpp"

extern "C" {
#include "nodes/pg_list.h"
#include "storage/lock.h"
}

namespace fencing::pg {

// fencing.takeover (_PG_init).
void DefineTakeoverSettings();
// Shared memory for the reasons (only under shared_preload_libraries) and the
// hook that tells an ended backend's client why.
void RegisterTakeoverHooks();

// The resource's HWM lock tag.
void ResourceRaiseLockTag(LOCKTAG *tag, const char *name_space, const char *resource);

// Ends the backends writing at the resource's HWM (holding its HWM lock in
// share mode, or its HWM row locked) when the committed HWM is ended_token
// (see above), each once (*signalled: the pids signalled so far). Returns how
// many such backends are still there; *row_locked: whether any transaction,
// ended or not, holds the HWM row locked (the raise would wait for it).
int EndWritersOfEndedLease(const char *name_space, const char *resource, Token ended_token,
                           List **signalled, bool *row_locked);

}  // namespace fencing::pg
