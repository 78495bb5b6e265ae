// Strict mode admits a token to one transaction only: the one that raised the
// high-water mark to it. That transaction may go on writing with the token
// (the later rows of a statement, later statements, a delete and re-insert of
// its own key), and nobody else may.
//
// This registry is the one place that rule lives: each raise a strict-mode
// write makes is recorded under the HWM's identity (a row's key, a resource,
// a table) with the token, for the current transaction. An equal token is
// admitted when, and only when, the registry holds that identity at that
// token. Entries of an aborted subtransaction are forgotten with it (its
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

// Strict-aware admission: token > hwm, or token >= hwm when not strict, or an
// equal token this transaction raised the HWM to.
bool AdmitsHere(HwmKind kind, Oid relid, const char *identity, Size identity_len, Token offered,
                Token hwm, bool strict);

}  // namespace fencing::pg
