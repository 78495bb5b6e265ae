#include "core/policy.hpp"

#include <cstdio>

namespace fencing {
namespace {

constexpr int kMaxAttnum = 1600;  // PostgreSQL's MaxHeapAttributeNumber

// Drops a field of length n and the single space after it. A separator must
// be followed by another field: "a " and "a  b" are malformed.
bool TakeSeparator(std::string_view *text, std::size_t n) noexcept {
    if (n == text->size()) {
        text->remove_prefix(n);
        return true;
    }
    if (n + 1 == text->size() || (*text)[n + 1] == ' ')
        return false;
    text->remove_prefix(n + 1);
    return true;
}

// Reads an unsigned decimal field followed by a space or the end of input.
bool TakeNumber(std::string_view *text, std::uint64_t max, std::uint64_t *out) noexcept {
    std::uint64_t value = 0;
    std::size_t i = 0;
    for (; i < text->size() && (*text)[i] != ' '; ++i) {
        char c = (*text)[i];
        if (c < '0' || c > '9')
            return false;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
        if (value > max)
            return false;
    }
    if (i == 0)
        return false;
    if (!TakeSeparator(text, i))
        return false;
    *out = value;
    return true;
}

bool TakeWord(std::string_view *text, std::string_view *out) noexcept {
    std::size_t end = text->find(' ');
    if (end == 0)
        return false;
    if (end == std::string_view::npos)
        end = text->size();
    *out = text->substr(0, end);
    return TakeSeparator(text, end);
}

}  // namespace

bool ResolveOfferedToken(bool column_changed, Token column_value, bool session_set,
                         Token session_value, OfferedToken *out) noexcept {
    if (column_changed && session_set && column_value != session_value)
        return false;
    if (column_changed) {
        *out = {TokenSource::kColumn, column_value};
    } else if (session_set) {
        *out = {TokenSource::kSession, session_value};
    } else {
        *out = {TokenSource::kNone, 0};
    }
    return true;
}

bool ParseScope(std::string_view text, Scope *out) noexcept {
    if (text == "row") {
        *out = Scope::kRow;
    } else if (text == "resource") {
        *out = Scope::kResource;
    } else if (text == "table") {
        *out = Scope::kTable;
    } else {
        return false;
    }
    return true;
}

bool ParseOnStale(std::string_view text, OnStale *out) noexcept {
    if (text == "error") {
        *out = OnStale::kError;
    } else if (text == "skip") {
        *out = OnStale::kSkip;
    } else {
        return false;
    }
    return true;
}

const char *ScopeName(Scope scope) noexcept {
    switch (scope) {
        case Scope::kRow:
            return "row";
        case Scope::kResource:
            return "resource";
        case Scope::kTable:
            return "table";
    }
    return "row";
}

const char *OnStaleName(OnStale on_stale) noexcept {
    return on_stale == OnStale::kSkip ? "skip" : "error";
}

std::size_t EncodePolicy(const Policy &policy, char *out) noexcept {
    int n =
        std::snprintf(out, kPolicyTextCapacity, "v1 %u %d %s %s %d %d %d", policy.home_relid,
                      policy.token_attnum, ScopeName(policy.scope), OnStaleName(policy.on_stale),
                      policy.strict ? 1 : 0, policy.require_token ? 1 : 0, policy.resource_attnum);
    return n < 0 ? 0 : static_cast<std::size_t>(n);
}

bool DecodePolicy(std::string_view text, Policy *out) noexcept {
    Policy p;
    std::string_view word;
    std::uint64_t n;
    if (!TakeWord(&text, &word) || word != "v1")
        return false;
    if (!TakeNumber(&text, UINT32_MAX, &n) || n == 0)
        return false;
    p.home_relid = static_cast<std::uint32_t>(n);
    if (!TakeNumber(&text, kMaxAttnum, &n) || n == 0)
        return false;
    p.token_attnum = static_cast<int>(n);
    if (!TakeWord(&text, &word) || !ParseScope(word, &p.scope))
        return false;
    if (!TakeWord(&text, &word) || !ParseOnStale(word, &p.on_stale))
        return false;
    if (!TakeNumber(&text, 1, &n))
        return false;
    p.strict = n == 1;
    if (!TakeNumber(&text, 1, &n))
        return false;
    p.require_token = n == 1;
    if (!TakeNumber(&text, kMaxAttnum, &n))
        return false;
    p.resource_attnum = static_cast<int>(n);
    if (!text.empty())
        return false;
    if ((p.scope == Scope::kResource) != (p.resource_attnum != 0))
        return false;
    *out = p;
    return true;
}

}  // namespace fencing
