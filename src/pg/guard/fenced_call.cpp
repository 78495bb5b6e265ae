#include "pg/guard/fenced_call.hpp"

namespace fencing::pg {
namespace {

FencedCall current = {false, InvalidOid, 0, 0, 0};

bool RunningOn(Oid home_relid) {
    return current.running && current.relid == home_relid;
}

}  // namespace

FencedCall EnterFencedCall(Oid relid, Token token) {
    FencedCall enclosing = current;
    current = {true, relid, token, 0, 0};
    return enclosing;
}

void LeaveFencedCall(const FencedCall &enclosing) {
    current = enclosing;
}

bool FencedCallSkipsStaleRows(Oid home_relid) {
    return RunningOn(home_relid);
}

void NoteFencedCallStale(Token hwm) {
    current.stale++;
    current.max_hwm = Max(current.max_hwm, hwm);
}

void FencedCallStale(int64 *stale, Token *max_hwm) {
    *stale = current.stale;
    *max_hwm = current.max_hwm;
}

bool FencedCallToken(Oid home_relid, Token *out) {
    if (!RunningOn(home_relid))
        return false;
    *out = current.token;
    return true;
}

}  // namespace fencing::pg
