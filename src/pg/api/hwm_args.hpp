// pg/api owns the SQL functions clients call: fencing_protect, fenced DML,
// reading, resetting and advancing high-water marks, and leases (see
// README.md).
//
// Arguments of the functions that name a protected table and one of its HWMs
// (fencing_high_water, fencing_reset, fencing_advance): the table's policy and
// the key, converted to the key column types as the caller.
#pragma once

#include "pg/base/pg.hpp"
#include "pg/catalog/policy_store.hpp"
#include "pg/keys/row_key.hpp"

extern "C" {
#include "utils/jsonb.h"
}

namespace fencing::pg {

// The protected table named by argument 0 and its policy (55000 when it is not
// protected). The policy is read in an internal session of its own: what
// follows runs as the caller.
Oid RequireProtectedTarget(FunctionCallInfo fcinfo, ProtectedRow *row);

// Row scope: the primary key values named by key, converted to the column
// types as the caller (a domain's CHECK or a type's input function on a key
// column is the caller's code and gets the caller's rights).
struct KeyValues {
    PrimaryKey pk;
    Oid pkindex;
    Oid types[INDEX_MAX_KEYS];
    Datum values[INDEX_MAX_KEYS];
};
void ReadRowKey(Oid relid, Jsonb *key, KeyValues *out);

// Resource scope: the resource named by key ({"<resource_column>": value}), as
// the guard spells it (the column type's text output). Runs as the caller.
char *ReadResourceKey(Oid relid, const ProtectedRow &row, Jsonb *key);

// The key argument n for row's scope, read as the caller: the primary key's
// values in row scope, the resource in resource scope, nothing in table
// scope (whatever the argument holds). given: the argument is not NULL.
struct TargetKey {
    bool given;
    KeyValues row;   // row scope, given
    char *resource;  // resource scope, given
};
void ReadTargetKey(FunctionCallInfo fcinfo, int n, Oid relid, const ProtectedRow &row,
                   TargetKey *out);
// ReadTargetKey where a row- or resource-scope table needs the key: 22023
// naming what to pass when it is NULL.
void RequireTargetKey(FunctionCallInfo fcinfo, int n, Oid relid, const ProtectedRow &row,
                      TargetKey *out);

// The token argument n: 22004 when NULL.
Token TokenArg(FunctionCallInfo fcinfo, int n);

}  // namespace fencing::pg
