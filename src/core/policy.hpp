// Server-free core: the fencing policy of a protected table and the decision
// whether an offered token is admitted against a high-water mark (HWM).
#pragma once

#include <cstdint>
#include <string_view>

#include "core/token.hpp"

namespace fencing {

enum class Scope { kRow, kResource, kTable };
enum class OnStale { kError, kSkip };

// How a protected relation is fenced. The PostgreSQL layer stores it in the
// guard trigger's arguments (EncodePolicy) so the trigger needs no catalog
// lookup per row.
struct Policy {
    std::uint32_t home_relid = 0;  // the relation named in fencing_protect()
    int token_attnum = 0;          // 1-based, in the relation the trigger is on
    Scope scope = Scope::kRow;
    OnStale on_stale = OnStale::kError;
    bool strict = false;  // strict: token > HWM; otherwise token >= HWM
    bool require_token = false;
    int resource_attnum = 0;  // resource scope only
};

// Non-strict: one holder may write many times with its token (token >= HWM).
// Strict: token > HWM, so each token is admitted once (the PostgreSQL layer
// lets the transaction that raised the HWM to a token go on writing with it).
constexpr bool Admits(Token offered, Token hwm, bool strict) noexcept {
    return strict ? offered > hwm : offered >= hwm;
}

// The verdict on an offered token, with strict mode's one exception: an equal
// token is admitted to the transaction that raised the HWM to it, and to
// nobody else. Whether this transaction did is the caller's to tell (the
// PostgreSQL layer's raise registry), and only asked for kIfRaisedHere.
enum class Admission { kAdmitted, kRefused, kIfRaisedHere };
constexpr Admission JudgeOffer(Token offered, Token hwm, bool strict) noexcept {
    if (Admits(offered, hwm, strict))
        return Admission::kAdmitted;
    return strict && offered == hwm ? Admission::kIfRaisedHere : Admission::kRefused;
}

// Where a write takes its token from.
enum class TokenSource {
    kNone,     // no token: unfenced write (rejected when require_token)
    kColumn,   // the statement wrote a new value into the token column
    kSession,  // fencing.token (SET LOCAL); the token column is filled in
};

// Resolves the offered token of a row write.
//   column_changed: the statement put a value in the token column that differs
//                   from the old row's (for INSERT: a non-NULL value)
//   session_set:    fencing.token is set
// Returns false when both are present and disagree: a statement may carry one
// token only.
struct OfferedToken {
    TokenSource source;
    Token value;
};
bool ResolveOfferedToken(bool column_changed, Token column_value, bool session_set,
                         Token session_value, OfferedToken *out) noexcept;

bool ParseScope(std::string_view text, Scope *out) noexcept;
bool ParseOnStale(std::string_view text, OnStale *out) noexcept;
const char *ScopeName(Scope scope) noexcept;
const char *OnStaleName(OnStale on_stale) noexcept;

// The trigger-argument form of a policy: one short ASCII string, versioned.
//   "v1 <home_relid> <token_attnum> <row|resource|table> <error|skip> <strict 0|1>
//    <require_token 0|1> <resource_attnum>"
// Encode writes at most kPolicyTextCapacity bytes including the NUL.
inline constexpr std::size_t kPolicyTextCapacity = 96;
std::size_t EncodePolicy(const Policy &policy, char *out) noexcept;
// Rejects anything Encode would not produce (wrong version, bad numbers,
// attnums out of range, a resource scope without a resource column).
bool DecodePolicy(std::string_view text, Policy *out) noexcept;

}  // namespace fencing
