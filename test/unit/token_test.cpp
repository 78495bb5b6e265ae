// Unit tests for the server-free core: src/core/token.{hpp,cpp}.
#include "core/token.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <string_view>

namespace fencing {
namespace {

using namespace std::string_view_literals;

constexpr Token kInt64Max = std::numeric_limits<std::int64_t>::max();

// Helpers that give readable failure messages (ParseStatus has no operator<<).
::testing::AssertionResult ParsesTo(std::string_view text, Token expected) {
    ParseResult r = ParseToken(text);
    if (r.status != ParseStatus::kOk) {
        return ::testing::AssertionFailure()
               << "\"" << std::string(text) << "\" did not parse (status "
               << static_cast<int>(r.status) << ")";
    }
    if (r.value != expected) {
        return ::testing::AssertionFailure() << "\"" << std::string(text) << "\" parsed to "
                                             << r.value << ", expected " << expected;
    }
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult FailsWith(std::string_view text, ParseStatus expected) {
    ParseResult r = ParseToken(text);
    if (r.status != expected) {
        return ::testing::AssertionFailure()
               << "\"" << std::string(text) << "\" gave status " << static_cast<int>(r.status)
               << ", expected " << static_cast<int>(expected);
    }
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult IsSyntaxError(std::string_view text) {
    return FailsWith(text, ParseStatus::kSyntaxError);
}

::testing::AssertionResult IsOutOfRange(std::string_view text) {
    return FailsWith(text, ParseStatus::kOutOfRange);
}

std::string Format(Token value) {
    char buf[kTokenTextCapacity];
    std::size_t n = FormatToken(value, buf);
    EXPECT_LT(n, kTokenTextCapacity);
    EXPECT_EQ(buf[n], '\0');
    return std::string(buf, n);
}

// ---------------------------------------------------------------------------
// ParseToken: decimal values and bounds

TEST(ParseTokenDecimal, ParsesZero) {
    EXPECT_TRUE(ParsesTo("0", 0));
    EXPECT_TRUE(ParsesTo("00000", 0));
}

TEST(ParseTokenDecimal, ParsesOrdinaryValues) {
    EXPECT_TRUE(ParsesTo("1", 1));
    EXPECT_TRUE(ParsesTo("34", 34));
    EXPECT_TRUE(ParsesTo("4294967330", 4294967330LL));
}

TEST(ParseTokenDecimal, AcceptsLeadingZeros) {
    EXPECT_TRUE(ParsesTo("007", 7));
    EXPECT_TRUE(ParsesTo("0000000000000000000000000000009223372036854775807", kInt64Max));
}

TEST(ParseTokenDecimal, AcceptsInt64Max) {
    EXPECT_TRUE(ParsesTo("9223372036854775807", kInt64Max));
    EXPECT_TRUE(ParsesTo("9223372036854775806", kInt64Max - 1));
}

TEST(ParseTokenDecimal, RejectsInt64MaxPlusOneAsOutOfRange) {
    EXPECT_TRUE(IsOutOfRange("9223372036854775808"));
    EXPECT_TRUE(IsOutOfRange("9223372036854775809"));
}

TEST(ParseTokenDecimal, RejectsUint64BoundaryValuesAsOutOfRange) {
    // Values that would wrap a naive uint64 accumulator.
    EXPECT_TRUE(IsOutOfRange("18446744073709551615"));  // UINT64_MAX
    EXPECT_TRUE(IsOutOfRange("18446744073709551616"));  // UINT64_MAX + 1 (wraps to 0)
    EXPECT_TRUE(IsOutOfRange("18446744073709551617"));  // wraps to 1
    EXPECT_TRUE(IsOutOfRange("92233720368547758070"));  // INT64_MAX * 10
}

TEST(ParseTokenDecimal, RejectsHugeNumbersAsOutOfRange) {
    EXPECT_TRUE(IsOutOfRange("99999999999999999999"));
    EXPECT_TRUE(IsOutOfRange(std::string(1000, '9')));
    EXPECT_TRUE(IsOutOfRange("  " + std::string(200, '7') + "\n"));
}

// ---------------------------------------------------------------------------
// ParseToken: hexadecimal

TEST(ParseTokenHex, ParsesZookeeperZxidExample) {
    EXPECT_TRUE(ParsesTo("0x100000022", 4294967330LL));
    EXPECT_TRUE(ParsesTo("0X100000022", 4294967330LL));
}

TEST(ParseTokenHex, IsCaseInsensitiveInPrefixAndDigits) {
    EXPECT_TRUE(ParsesTo("0xff", 255));
    EXPECT_TRUE(ParsesTo("0XFF", 255));
    EXPECT_TRUE(ParsesTo("0XfF", 255));
    EXPECT_TRUE(ParsesTo("0xAbCdEf", 0xabcdef));
    EXPECT_TRUE(ParsesTo("0x7FFFFFFFFFFFFFFF", kInt64Max));
}

TEST(ParseTokenHex, ParsesZeroAndLeadingZeros) {
    EXPECT_TRUE(ParsesTo("0x0", 0));
    EXPECT_TRUE(ParsesTo("0x00000000000000000000000000", 0));
    EXPECT_TRUE(ParsesTo("0x0000000000000000001", 1));
    EXPECT_TRUE(ParsesTo("0x000000000000000000007fffffffffffffff", kInt64Max));
}

TEST(ParseTokenHex, AcceptsInt64Max) {
    EXPECT_TRUE(ParsesTo("0x7fffffffffffffff", kInt64Max));
}

TEST(ParseTokenHex, RejectsAboveInt64MaxAsOutOfRange) {
    EXPECT_TRUE(IsOutOfRange("0x8000000000000000"));
    EXPECT_TRUE(IsOutOfRange("0xffffffffffffffff"));
    EXPECT_TRUE(IsOutOfRange("0x10000000000000000"));  // 2^64 would wrap to 0
    EXPECT_TRUE(IsOutOfRange("0x" + std::string(100, 'f')));
}

TEST(ParseTokenHex, RejectsPrefixWithoutDigits) {
    EXPECT_TRUE(IsSyntaxError("0x"));
    EXPECT_TRUE(IsSyntaxError("0X"));
    EXPECT_TRUE(IsSyntaxError("  0x  "));
}

TEST(ParseTokenHex, RejectsNonHexDigitsAndMalformedPrefixes) {
    EXPECT_TRUE(IsSyntaxError("0xg"));
    EXPECT_TRUE(IsSyntaxError("0x1g"));
    EXPECT_TRUE(IsSyntaxError("0x-1"));
    EXPECT_TRUE(IsSyntaxError("0x+1"));
    EXPECT_TRUE(IsSyntaxError("0x 1"));
    EXPECT_TRUE(IsSyntaxError("0x0x1"));
    EXPECT_TRUE(IsSyntaxError("00x1"));
    EXPECT_TRUE(IsSyntaxError("x1"));
    EXPECT_TRUE(IsSyntaxError("1x1"));
    EXPECT_TRUE(IsSyntaxError("0b101"));
}

TEST(ParseTokenHex, DecimalInputDoesNotAcceptHexLetters) {
    EXPECT_TRUE(IsSyntaxError("ff"));
    EXPECT_TRUE(IsSyntaxError("1a"));
    EXPECT_TRUE(IsSyntaxError("1e5"));
}

// ---------------------------------------------------------------------------
// ParseToken: whitespace

TEST(ParseTokenWhitespace, AcceptsLeadingAndTrailingSpaces) {
    EXPECT_TRUE(ParsesTo(" 34", 34));
    EXPECT_TRUE(ParsesTo("34 ", 34));
    EXPECT_TRUE(ParsesTo("   34   ", 34));
    EXPECT_TRUE(ParsesTo(" 9223372036854775807 ", kInt64Max));
    EXPECT_TRUE(ParsesTo(" 0x100000022 ", 4294967330LL));
}

TEST(ParseTokenWhitespace, AcceptsTabsNewlinesAndOtherAsciiSpace) {
    EXPECT_TRUE(ParsesTo("\t34\t", 34));
    EXPECT_TRUE(ParsesTo("\n34\n", 34));
    EXPECT_TRUE(ParsesTo("\r\n34\r\n", 34));
    EXPECT_TRUE(ParsesTo("\f\v 34 \v\f", 34));
    EXPECT_TRUE(ParsesTo(" \t\n0xFF\n\t ", 255));
}

TEST(ParseTokenWhitespace, RejectsInternalWhitespace) {
    EXPECT_TRUE(IsSyntaxError("1 2"));
    EXPECT_TRUE(IsSyntaxError("1\t2"));
    EXPECT_TRUE(IsSyntaxError("1\n2"));
    EXPECT_TRUE(IsSyntaxError("0 x1"));
    EXPECT_TRUE(IsSyntaxError(" 9223372036854775807 0 "));
}

TEST(ParseTokenWhitespace, RejectsNonAsciiWhitespace) {
    EXPECT_TRUE(IsSyntaxError(std::string("\xC2\xA0") + "34"));  // U+00A0 NO-BREAK SPACE
    EXPECT_TRUE(IsSyntaxError("34\xA0"));
}

TEST(ParseTokenWhitespace, OutOfRangeSurvivesSurroundingWhitespace) {
    EXPECT_TRUE(IsOutOfRange(" 9223372036854775808 "));
    EXPECT_TRUE(IsOutOfRange("\t0x8000000000000000\n"));
}

// ---------------------------------------------------------------------------
// ParseToken: junk

TEST(ParseTokenSyntax, RejectsEmptyAndBlankInput) {
    EXPECT_TRUE(IsSyntaxError(""));
    EXPECT_TRUE(IsSyntaxError(std::string_view()));
    EXPECT_TRUE(IsSyntaxError(" "));
    EXPECT_TRUE(IsSyntaxError(" \t\n\r\f\v"));
}

TEST(ParseTokenSyntax, RejectsSigns) {
    EXPECT_TRUE(IsSyntaxError("-1"));
    EXPECT_TRUE(IsSyntaxError("+1"));
    EXPECT_TRUE(IsSyntaxError("-0"));
    EXPECT_TRUE(IsSyntaxError("+0"));
    EXPECT_TRUE(IsSyntaxError("-"));
    EXPECT_TRUE(IsSyntaxError("+"));
    EXPECT_TRUE(IsSyntaxError("-9223372036854775808"));
    EXPECT_TRUE(IsSyntaxError(" - 1"));
}

TEST(ParseTokenSyntax, RejectsGarbageAndTrailingJunk) {
    EXPECT_TRUE(IsSyntaxError("abc"));
    EXPECT_TRUE(IsSyntaxError("12a"));
    EXPECT_TRUE(IsSyntaxError("a12"));
    EXPECT_TRUE(IsSyntaxError("1.0"));
    EXPECT_TRUE(IsSyntaxError("1,000"));
    EXPECT_TRUE(IsSyntaxError("1_000"));
    EXPECT_TRUE(IsSyntaxError("34;"));
    EXPECT_TRUE(IsSyntaxError("\xff"));
}

TEST(ParseTokenSyntax, SyntaxIsJudgedBeforeRange) {
    EXPECT_TRUE(IsSyntaxError("99999999999999999999x"));
    EXPECT_TRUE(IsSyntaxError("9223372036854775808 1"));
    EXPECT_TRUE(IsSyntaxError(std::string(100, '9') + "-"));
    EXPECT_TRUE(IsSyntaxError("0x8000000000000000g"));
    EXPECT_TRUE(IsSyntaxError("0x" + std::string(100, 'f') + "z"));
}

TEST(ParseTokenSyntax, RejectsEmbeddedNul) {
    EXPECT_TRUE(IsSyntaxError("\0"sv));
    EXPECT_TRUE(IsSyntaxError("1\0"sv));
    EXPECT_TRUE(IsSyntaxError(std::string(1, '\0') + "1"));
    EXPECT_TRUE(IsSyntaxError("12" + std::string(1, '\0') + "34"));
    EXPECT_TRUE(IsSyntaxError("0x" + std::string(1, '\0') + "1"));
    EXPECT_TRUE(IsSyntaxError("0x1\0"sv));
    EXPECT_TRUE(IsSyntaxError(" 34 \0"sv));
}

TEST(ParseTokenSyntax, ReadsOnlyTheGivenViewLength) {
    // The view ends before the junk, so the junk must not be looked at.
    const char text[] = "12345junk";
    EXPECT_TRUE(ParsesTo(std::string_view(text, 5), 12345));
    EXPECT_TRUE(ParsesTo(std::string_view(text, 1), 1));
}

// ---------------------------------------------------------------------------
// FormatToken

TEST(FormatToken, FormatsEdgeValues) {
    EXPECT_EQ(Format(0), "0");
    EXPECT_EQ(Format(1), "1");
    EXPECT_EQ(Format(9), "9");
    EXPECT_EQ(Format(10), "10");
    EXPECT_EQ(Format(4294967330LL), "4294967330");
    EXPECT_EQ(Format(kInt64Max - 1), "9223372036854775806");
    EXPECT_EQ(Format(kInt64Max), "9223372036854775807");
}

TEST(FormatToken, MaxTokenFillsCapacityExactly) {
    EXPECT_EQ(kMaxToken, kInt64Max);
    EXPECT_EQ(kTokenTextCapacity, std::string("9223372036854775807").size() + 1);
    char buf[kTokenTextCapacity + 4];
    std::fill(std::begin(buf), std::end(buf), '#');
    std::size_t n = FormatToken(kMaxToken, buf);
    EXPECT_EQ(n, kTokenTextCapacity - 1);
    EXPECT_EQ(buf[n], '\0');
    // Nothing written past the documented capacity.
    for (std::size_t i = kTokenTextCapacity; i < sizeof buf; ++i) EXPECT_EQ(buf[i], '#') << i;
}

TEST(FormatToken, PowersOfTenAndTheirNeighboursRoundTrip) {
    Token p = 1;
    for (int i = 0; i <= 18; ++i, p *= 10) {
        for (Token v : {p - 1, p, p + 1}) {
            std::string s = Format(v);
            EXPECT_EQ(s, std::to_string(v));
            EXPECT_TRUE(ParsesTo(s, v));
        }
    }
}

TEST(FormatToken, RoundTripsPseudoRandomValues) {
    std::mt19937_64 rng(0x5eed'f00d'cafe'beefULL);
    for (int i = 0; i < 5000; ++i) {
        // Vary the magnitude so short and long values are both exercised.
        const int bits = static_cast<int>(rng() % 63) + 1;
        const Token v = static_cast<Token>(rng() >> (64 - bits));
        ASSERT_GE(v, 0);
        const std::string s = Format(v);
        ASSERT_EQ(s, std::to_string(v));
        ASSERT_TRUE(ParsesTo(s, v));
        ASSERT_TRUE(ParsesTo(" \t" + s + "\n", v));
        // The hex form of the same value parses back too.
        char hex[32];
        std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(v));
        ASSERT_TRUE(ParsesTo(hex, v)) << hex;
    }
}

TEST(FormatToken, OutputHasNoLeadingZerosOrSpaces) {
    std::mt19937_64 rng(42);
    for (int i = 0; i < 1000; ++i) {
        const unsigned shift = 1 + static_cast<unsigned>(rng() % 63);
        const Token v = static_cast<Token>(rng() >> shift);
        const std::string s = Format(v);
        if (v == 0)
            continue;
        ASSERT_FALSE(s.empty());
        ASSERT_NE(s.front(), '0') << s;
        for (char c : s) ASSERT_TRUE(c >= '0' && c <= '9') << s;
    }
}

// ---------------------------------------------------------------------------
// Zxid helpers

TEST(Zxid, SplitsTheDocumentedExample) {
    const Token zxid = 0x100000022;
    EXPECT_EQ(ZxidEpoch(zxid), 1);
    EXPECT_EQ(ZxidCounter(zxid), 0x22);
}

TEST(Zxid, SplitsEdgeValues) {
    EXPECT_EQ(ZxidEpoch(0), 0);
    EXPECT_EQ(ZxidCounter(0), 0);
    EXPECT_EQ(ZxidEpoch(0xFFFFFFFF), 0);
    EXPECT_EQ(ZxidCounter(0xFFFFFFFF), 0xFFFFFFFF);
    EXPECT_EQ(ZxidEpoch(0x100000000), 1);
    EXPECT_EQ(ZxidCounter(0x100000000), 0);
    EXPECT_EQ(ZxidEpoch(kMaxToken), kMaxZxidEpoch);
    EXPECT_EQ(ZxidCounter(kMaxToken), kMaxZxidCounter);
}

TEST(Zxid, HelpersAreConstexpr) {
    static_assert(ZxidEpoch(0x100000022) == 1);
    static_assert(ZxidCounter(0x100000022) == 0x22);
    static_assert(kMaxZxidEpoch == 0x7FFFFFFF);
    static_assert(kMaxZxidCounter == 0xFFFFFFFF);
    SUCCEED();
}

TEST(Zxid, MakeZxidBuildsTheDocumentedExample) {
    Token out = -1;
    ASSERT_TRUE(MakeZxid(1, 0x22, &out));
    EXPECT_EQ(out, 4294967330LL);
    EXPECT_TRUE(ParsesTo("0x100000022", out));
}

TEST(Zxid, MakeZxidAcceptsFieldBounds) {
    Token out = -1;
    ASSERT_TRUE(MakeZxid(0, 0, &out));
    EXPECT_EQ(out, 0);
    ASSERT_TRUE(MakeZxid(0, kMaxZxidCounter, &out));
    EXPECT_EQ(out, 0xFFFFFFFF);
    ASSERT_TRUE(MakeZxid(kMaxZxidEpoch, 0, &out));
    EXPECT_EQ(out, 0x7FFFFFFF00000000);
    ASSERT_TRUE(MakeZxid(kMaxZxidEpoch, kMaxZxidCounter, &out));
    EXPECT_EQ(out, kMaxToken);
}

TEST(Zxid, MakeZxidRejectsOutOfRangeEpochAndLeavesOutputAlone) {
    Token out = 12345;
    EXPECT_FALSE(MakeZxid(kMaxZxidEpoch + 1, 0, &out));
    EXPECT_FALSE(MakeZxid(-1, 0, &out));
    EXPECT_FALSE(MakeZxid(std::numeric_limits<std::int64_t>::max(), 0, &out));
    EXPECT_FALSE(MakeZxid(std::numeric_limits<std::int64_t>::min(), 0, &out));
    EXPECT_EQ(out, 12345);
}

TEST(Zxid, MakeZxidRejectsOutOfRangeCounterAndLeavesOutputAlone) {
    Token out = 12345;
    EXPECT_FALSE(MakeZxid(0, kMaxZxidCounter + 1, &out));
    EXPECT_FALSE(MakeZxid(0, -1, &out));
    EXPECT_FALSE(MakeZxid(1, std::numeric_limits<std::int64_t>::max(), &out));
    EXPECT_FALSE(MakeZxid(1, std::numeric_limits<std::int64_t>::min(), &out));
    EXPECT_EQ(out, 12345);
}

TEST(Zxid, MakeZxidRoundTripsWithSplit) {
    std::mt19937_64 rng(7);
    for (int i = 0; i < 2000; ++i) {
        const std::int64_t epoch = static_cast<std::int64_t>(rng() % (kMaxZxidEpoch + 1));
        const std::int64_t counter = static_cast<std::int64_t>(rng() % (kMaxZxidCounter + 1));
        Token zxid = -1;
        ASSERT_TRUE(MakeZxid(epoch, counter, &zxid));
        ASSERT_GE(zxid, 0);
        ASSERT_EQ(ZxidEpoch(zxid), epoch);
        ASSERT_EQ(ZxidCounter(zxid), counter);
    }
}

}  // namespace
}  // namespace fencing
