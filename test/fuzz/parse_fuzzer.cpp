// libFuzzer target for the server-free core's token parser and formatter.
//
// It checks properties rather than merely calling the code; any violation
// aborts through __builtin_trap() so libFuzzer records a crash.
#include "core/policy.hpp"
#include "core/token.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace {

using fencing::DecodePolicy;
using fencing::EncodePolicy;
using fencing::FormatToken;
using fencing::kMaxToken;
using fencing::kPolicyTextCapacity;
using fencing::kTokenTextCapacity;
using fencing::ParseResult;
using fencing::ParseStatus;
using fencing::ParseToken;
using fencing::Policy;
using fencing::Scope;
using fencing::Token;

void Check(bool ok) {
    if (!ok)
        __builtin_trap();
}

// The same whitespace set the parser documents as "ASCII whitespace".
bool IsAsciiSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view Trim(std::string_view s) {
    while (!s.empty() && IsAsciiSpace(s.front())) s.remove_prefix(1);
    while (!s.empty() && IsAsciiSpace(s.back())) s.remove_suffix(1);
    return s;
}

bool IsDigitIn(char c, int base) {
    if (c >= '0' && c <= '9')
        return true;
    if (base != 16)
        return false;
    return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int DigitOf(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return c - 'A' + 10;
}

// An independent reference model of the grammar: returns the expected status
// and, for kOk, the value. Overflow is tracked with a saturating accumulator
// over unsigned __int128 so it cannot share the parser's arithmetic bugs.
ParseResult Reference(std::string_view text) {
    std::string_view body = Trim(text);
    int base = 10;
    if (body.size() >= 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) {
        base = 16;
        body.remove_prefix(2);
    }
    if (body.empty())
        return {ParseStatus::kSyntaxError, 0};
    for (char c : body) {
        if (!IsDigitIn(c, base))
            return {ParseStatus::kSyntaxError, 0};
    }
    unsigned __int128 v = 0;
    const unsigned __int128 limit = static_cast<unsigned __int128>(kMaxToken);
    for (char c : body) {
        v = v * static_cast<unsigned>(base) + static_cast<unsigned>(DigitOf(c));
        if (v > limit)
            return {ParseStatus::kOutOfRange, 0};
    }
    return {ParseStatus::kOk, static_cast<Token>(v)};
}

// FormatToken output must be plain canonical decimal that parses back to v.
void CheckFormatRoundTrip(Token v) {
    Check(v >= 0);
    // Guard bytes after the documented capacity catch overruns even without ASan.
    char buf[kTokenTextCapacity + 8];
    std::memset(buf, '#', sizeof buf);
    const std::size_t n = FormatToken(v, buf);
    Check(n >= 1 && n < kTokenTextCapacity);
    Check(buf[n] == '\0');
    for (std::size_t i = kTokenTextCapacity; i < sizeof buf; ++i) Check(buf[i] == '#');
    for (std::size_t i = 0; i < n; ++i) Check(buf[i] >= '0' && buf[i] <= '9');
    Check(n == 1 || buf[0] != '0');  // no leading zeros
    Check(std::to_string(v) == std::string_view(buf, n));

    const ParseResult again = ParseToken(std::string_view(buf, n));
    Check(again.status == ParseStatus::kOk);
    Check(again.value == v);

    // Formatting is idempotent.
    char buf2[kTokenTextCapacity];
    const std::size_t n2 = FormatToken(again.value, buf2);
    Check(n2 == n && std::memcmp(buf, buf2, n) == 0);
}

}  // namespace

// The guard trigger decodes its policy from trigger arguments: whatever
// DecodePolicy accepts must be exactly what EncodePolicy writes back.
void CheckPolicyRoundTrip(std::string_view text) {
    Policy p;
    if (!DecodePolicy(text, &p))
        return;
    Check(p.home_relid != 0 && p.token_attnum > 0 && p.token_attnum <= 1600);
    Check((p.scope == Scope::kResource) == (p.resource_attnum != 0));
    char encoded[kPolicyTextCapacity];
    std::size_t n = EncodePolicy(p, encoded);
    Check(n > 0 && n < kPolicyTextCapacity);
    Policy again;
    Check(DecodePolicy(std::string_view(encoded, n), &again));
    Check(again.home_relid == p.home_relid && again.token_attnum == p.token_attnum &&
          again.scope == p.scope && again.on_stale == p.on_stale && again.strict == p.strict &&
          again.require_token == p.require_token && again.resource_attnum == p.resource_attnum);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    CheckPolicyRoundTrip(text);
    const ParseResult r = ParseToken(text);

    // Status is one of the three declared values and matches the reference model.
    Check(r.status == ParseStatus::kOk || r.status == ParseStatus::kSyntaxError ||
          r.status == ParseStatus::kOutOfRange);
    const ParseResult ref = Reference(text);
    Check(r.status == ref.status);
    if (r.status == ParseStatus::kOk)
        Check(r.value == ref.value);

    // Surrounding whitespace never changes the outcome.
    const std::string_view trimmed = Trim(text);
    const ParseResult rt = ParseToken(trimmed);
    Check(rt.status == r.status);
    if (r.status == ParseStatus::kOk)
        Check(rt.value == r.value);

    // Adding more surrounding whitespace does not change it either.
    const std::string padded = " \t" + std::string(text) + "\n ";
    const ParseResult rp = ParseToken(padded);
    Check(rp.status == r.status);
    if (r.status == ParseStatus::kOk)
        Check(rp.value == r.value);

    if (r.status == ParseStatus::kOk) {
        Check(r.value >= 0 && r.value <= kMaxToken);
        CheckFormatRoundTrip(r.value);
    }

    // Trailing junk is a syntax error whatever precedes it (even an overflow):
    // syntax is judged over the whole input before range.
    Check(ParseToken(std::string(text) + "z").status == ParseStatus::kSyntaxError);

    // Treat the first 8 bytes as a value too, so the formatter sees the whole range.
    if (size >= 8) {
        std::uint64_t raw;
        std::memcpy(&raw, data, sizeof raw);
        CheckFormatRoundTrip(static_cast<Token>(raw & static_cast<std::uint64_t>(kMaxToken)));
    }
    return 0;
}
