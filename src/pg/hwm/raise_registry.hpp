// Strict mode admits a token to one transaction only: the one that raised the
// high-water mark to it. That transaction may go on writing with the token
// (the later rows of a statement, later statements, a delete and re-insert of
// its own key), and nobody else may.
//
// The rule is JudgeOffer's (core/policy.hpp); this registry holds the fact it
// asks for: each raise a strict-mode write makes, under the HWM's identity (a
// row's key, a resource, a table) with the token, for the current
// transaction. Entries of an aborted subtransaction are forgotten with it (its
// raises were rolled back); everything is forgotten at transaction end.
#pragma once

#include "core/token.hpp"
#include "pg/base/pg.hpp"

namespace fencing::pg {

// kRow: a live row's token; kTombstone: the HWM a deleted key left behind.
enum class HwmKind : char { kRow = 'r', kTombstone = 'd', kResource = 's', kTable = 't' };

// identity: for kRow and kTombstone the canonical primary key (the bytes of
// its text[] tombstone key; none for a table without one), for kResource
// "<namespace>\0<resource>", for kTable nothing (the relid says it all).
void RecordRaise(HwmKind kind, Oid relid, const char *identity, Size identity_len, Token token);
bool RaisedHere(HwmKind kind, Oid relid, const char *identity, Size identity_len, Token token);

// Registers the transaction callbacks that forget the raises of an aborted
// subtransaction and of an ended transaction; once per backend, from _PG_init.
void RegisterRaiseRegistryCallbacks();

}  // namespace fencing::pg
