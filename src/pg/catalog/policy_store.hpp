// pg/catalog owns what the extension's tables say about other objects: each
// protected table's policy, each resource namespace's owner, and which
// subscription replicates a table (see README.md).
//
// fencing.protected: one row per protected table, the single source of truth
// for its policy. Dumped by pg_dump (an extension configuration table); every
// change to a row re-installs the table's guards (fencing.protected_sync,
// pg/guard/install.hpp). All functions here run inside an internal session
// (pg/base/internal_access.hpp).
#pragma once

#include "core/policy.hpp"
#include "pg/base/pg.hpp"

extern "C" {
#include "nodes/pg_list.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"
}

namespace fencing::pg {

// A row of fencing.protected.
struct ProtectedRow {
    Oid relid;
    char token_column[NAMEDATALEN];
    Scope scope;
    char resource_column[NAMEDATALEN];  // empty when none
    char *resource_namespace;           // palloc'd; empty when none
    OnStale on_stale;
    bool strict;
    bool require_token;
};

bool ReadProtectedRow(Oid relid, ProtectedRow *row);
// Every relid in fencing.protected, in OID order. The one function here that
// opens an internal session of its own: the list is built in the caller's
// memory context, which SPI_finish leaves intact.
List *ProtectedRelids();
// Inserts or replaces the row (fencing.protected_sync then installs guards).
void WriteProtectedRow(const ProtectedRow &row);
void DeleteProtectedRow(Oid relid);
// Whether relid's row of fencing.protected as the latest snapshot sees it is
// another version than the transaction's snapshot sees (a policy change
// committed after a REPEATABLE READ snapshot was taken).
bool ProtectedRowChangedSinceSnapshot(Oid relid);
// Under REPEATABLE READ or SERIALIZABLE: refuses (40001) when the fencing
// state of any of relids (policy, tombstones, table HWM, tombstone floor) as
// the latest snapshot sees it differs from what the transaction's snapshot
// sees. A step that carries that state to another table (a swap, a DROP
// kept for a recreate) reads it with the transaction's snapshot, and would
// silently leave behind what a writer committed after it was taken.
// what: the step, for the message. Call inside an internal session.
void RequireStateInSnapshot(const Oid *relids, int n, const char *what);
// The same for the rows of relid (every leaf of a partitioned table): a copy
// made in the transaction (Alembic's batch recreate: INSERT ... SELECT) saw
// its rows with the snapshot, and a fenced write committed after it would be
// lost with its token. Reads the heap directly (no user code runs); relid is
// locked by the caller; under READ COMMITTED it does nothing.
void RequireRowsInSnapshot(Oid relid, const char *what);
// Whether a row of rel visible to scan_with is invisible to other.
bool RowsDiffer(Relation rel, Snapshot scan_with, Snapshot other);
// Whether the extension's SQL in this database has the function signature
// ('fencing.keep_dropped_state(oid,boolean)'): a database whose extension is not yet
// updated (ALTER EXTENSION fencing UPDATE) runs this library with the older
// version's SQL, and keeps that version's behaviour. Inside an internal
// session.
bool ExtensionFunctionInstalled(const char *signature);

// Orders the DDL and policy writes of one partition tree: ExclusiveLock on
// the tree's root (advisory lock, objsubid kPolicyTreeLockField4, classid
// the root's OID), held to the end of the transaction. Taken before a DDL
// command locks any of the tree's tables (ddl_command_start), and before a
// policy row of the tree is written: installing a tree's guards locks every
// leaf and the policy row, and two commands doing that for one tree in
// parallel (pg_restore -j: each partition's ADD CONSTRAINT, each guard's
// CREATE TRIGGER, the policy row's COPY) would each hold what the other
// waits for. A table outside any partition tree is its own tree (an index:
// its table's), for the same reason: a job's CREATE TRIGGER on it beside the
// job loading fencing.protected.
constexpr uint16 kPolicyTreeLockField4 = 0x4450;  // 'DP'
void LockPolicyTree(Oid relid);

// The default of fencing.protected.require_token, which the installed
// version's scripts set: a table protected automatically gets it, as a
// fencing_protect() call without require_token does. True when it cannot be
// read (fail closed).
bool RequireTokenByDefault();

// The nearest partition ancestor of relid that is protected, if any.
Oid ProtectedAncestor(Oid relid);

// A protected table in relid's partition tree below relid, if any: it is
// fenced as its own home, with state (tombstones, a table HWM) that relid
// protected as a home would not see.
Oid ProtectedDescendant(Oid relid);

// How many fencing_token columns relid has; the first one's name in first.
int TokenColumns(Oid relid, char first[NAMEDATALEN]);

// The owner of a relation.
Oid RelationOwner(Oid relid);

}  // namespace fencing::pg
