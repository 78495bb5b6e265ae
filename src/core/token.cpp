#include "core/token.hpp"

namespace fencing {
namespace {

constexpr bool IsSpace(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

constexpr int DigitValue(char c, int base) noexcept {
    int v = -1;
    if (c >= '0' && c <= '9') {
        v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
        v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
        v = c - 'A' + 10;
    }
    return v < base ? v : -1;
}

std::string_view TrimSpace(std::string_view s) noexcept {
    while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
    while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
    return s;
}

}  // namespace

ParseResult ParseToken(std::string_view text) noexcept {
    std::string_view digits = TrimSpace(text);
    int base = 10;
    if (digits.size() >= 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
        base = 16;
        digits.remove_prefix(2);
    }
    if (digits.empty())
        return {ParseStatus::kSyntaxError, 0};

    // Accumulate in unsigned arithmetic; once above kMaxToken the value is only
    // remembered as "too big" so the rest of the input is still syntax-checked.
    std::uint64_t value = 0;
    bool overflow = false;
    for (char c : digits) {
        int d = DigitValue(c, base);
        if (d < 0)
            return {ParseStatus::kSyntaxError, 0};
        if (overflow)
            continue;
        if (value > (static_cast<std::uint64_t>(kMaxToken) - static_cast<std::uint64_t>(d)) /
                        static_cast<std::uint64_t>(base)) {
            overflow = true;
            continue;
        }
        value = value * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
    }
    if (overflow)
        return {ParseStatus::kOutOfRange, 0};
    return {ParseStatus::kOk, static_cast<Token>(value)};
}

std::size_t FormatToken(Token value, char *out) noexcept {
    char reversed[kTokenTextCapacity];
    std::size_t n = 0;
    std::uint64_t v = static_cast<std::uint64_t>(value < 0 ? 0 : value);
    do {
        reversed[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (std::size_t i = 0; i < n; ++i) out[i] = reversed[n - 1 - i];
    out[n] = '\0';
    return n;
}

bool MakeZxid(std::int64_t epoch, std::int64_t counter, Token *out) noexcept {
    if (epoch < 0 || epoch > kMaxZxidEpoch || counter < 0 || counter > kMaxZxidCounter)
        return false;
    *out = static_cast<Token>((static_cast<std::uint64_t>(epoch) << 32) |
                              static_cast<std::uint64_t>(counter));
    return true;
}

}  // namespace fencing
