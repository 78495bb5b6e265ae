// Server-free core of the fencing extension: the fencing token's text form.
// Plain C++17, no PostgreSQL headers, no exceptions: it is linked into the
// extension and into the unit tests and the fuzzer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fencing {

// A fencing token is a non-negative 64-bit value. It is stored as int64 so it
// shares PostgreSQL's by-value int8 representation; negative values never
// exist inside the server.
using Token = std::int64_t;

inline constexpr Token kMaxToken = INT64_MAX;

// Longest decimal rendering ("9223372036854775807") plus the terminating NUL.
inline constexpr std::size_t kTokenTextCapacity = 20;

enum class ParseStatus {
    kOk,
    kSyntaxError,  // empty, a sign, a non-digit, trailing junk, "0x" alone
    kOutOfRange,   // well-formed but above kMaxToken
};

struct ParseResult {
    ParseStatus status;
    Token value;  // meaningful only when status == kOk
};

// Accepts, with optional surrounding ASCII whitespace:
//   decimal digits                   "34", "007"
//   0x / 0X followed by hex digits   "0x100000022", "0XfF"
// Syntax is judged over the whole input before range, so "99999999999999999999x"
// is a syntax error, not an overflow.
ParseResult ParseToken(std::string_view text) noexcept;

// Writes the decimal form of a valid token (0 <= value) into out, which must hold
// kTokenTextCapacity bytes, NUL-terminates it, and returns its length.
std::size_t FormatToken(Token value, char *out) noexcept;

// ZooKeeper zxids are (epoch << 32) | counter. The epoch must stay below 2^31 so
// the token is non-negative.
inline constexpr std::int64_t kMaxZxidEpoch = INT32_MAX;
inline constexpr std::int64_t kMaxZxidCounter = UINT32_MAX;

inline constexpr std::int64_t ZxidEpoch(Token token) noexcept {
    return token >> 32;
}
inline constexpr std::int64_t ZxidCounter(Token token) noexcept {
    return token & 0xFFFFFFFF;
}

// Returns false when epoch or counter is outside its field.
bool MakeZxid(std::int64_t epoch, std::int64_t counter, Token *out) noexcept;

}  // namespace fencing
