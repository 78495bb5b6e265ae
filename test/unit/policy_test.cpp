// Unit tests for the server-free policy core: the admit decision, where a
// write's token comes from, and the trigger-argument encoding of a policy.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "core/policy.hpp"

using fencing::Admits;
using fencing::DecodePolicy;
using fencing::EncodePolicy;
using fencing::OfferedToken;
using fencing::OnStale;
using fencing::Policy;
using fencing::ResolveOfferedToken;
using fencing::Scope;
using fencing::TokenSource;

TEST(Admits, NonStrictAcceptsEqualAndHigher) {
    EXPECT_TRUE(Admits(34, 34, false));
    EXPECT_TRUE(Admits(35, 34, false));
    EXPECT_FALSE(Admits(33, 34, false));
}

TEST(Admits, StrictRequiresHigher) {
    EXPECT_FALSE(Admits(34, 34, true));
    EXPECT_TRUE(Admits(35, 34, true));
    EXPECT_FALSE(Admits(33, 34, true));
}

TEST(Admits, Extremes) {
    EXPECT_TRUE(Admits(fencing::kMaxToken, fencing::kMaxToken, false));
    EXPECT_FALSE(Admits(fencing::kMaxToken, fencing::kMaxToken, true));
    EXPECT_TRUE(Admits(0, 0, false));
    EXPECT_FALSE(Admits(0, 1, false));
}

TEST(ResolveOfferedToken, ColumnWins) {
    OfferedToken t;
    ASSERT_TRUE(ResolveOfferedToken(true, 34, false, 0, &t));
    EXPECT_EQ(t.source, TokenSource::kColumn);
    EXPECT_EQ(t.value, 34);
}

TEST(ResolveOfferedToken, SessionFillsIn) {
    OfferedToken t;
    ASSERT_TRUE(ResolveOfferedToken(false, 0, true, 35, &t));
    EXPECT_EQ(t.source, TokenSource::kSession);
    EXPECT_EQ(t.value, 35);
}

TEST(ResolveOfferedToken, AgreeingColumnAndSession) {
    OfferedToken t;
    ASSERT_TRUE(ResolveOfferedToken(true, 36, true, 36, &t));
    EXPECT_EQ(t.value, 36);
}

TEST(ResolveOfferedToken, ConflictingColumnAndSessionIsRefused) {
    OfferedToken t;
    EXPECT_FALSE(ResolveOfferedToken(true, 37, true, 36, &t));
}

TEST(ResolveOfferedToken, NeitherMeansNoToken) {
    OfferedToken t;
    ASSERT_TRUE(ResolveOfferedToken(false, 99, false, 0, &t));
    EXPECT_EQ(t.source, TokenSource::kNone);
}

TEST(PolicyText, ScopeAndOnStaleNames) {
    Scope s;
    EXPECT_TRUE(fencing::ParseScope("row", &s));
    EXPECT_EQ(s, Scope::kRow);
    EXPECT_TRUE(fencing::ParseScope("resource", &s));
    EXPECT_EQ(s, Scope::kResource);
    EXPECT_TRUE(fencing::ParseScope("table", &s));
    EXPECT_EQ(s, Scope::kTable);
    EXPECT_FALSE(fencing::ParseScope("Row", &s));
    EXPECT_FALSE(fencing::ParseScope("", &s));
    OnStale o;
    EXPECT_TRUE(fencing::ParseOnStale("skip", &o));
    EXPECT_EQ(o, OnStale::kSkip);
    EXPECT_FALSE(fencing::ParseOnStale("ignore", &o));
}

TEST(PolicyEncoding, RoundTripsEveryField) {
    Policy p;
    p.home_relid = 4294967295u;
    p.token_attnum = 1600;
    p.scope = Scope::kResource;
    p.on_stale = OnStale::kSkip;
    p.strict = true;
    p.require_token = true;
    p.resource_attnum = 7;
    char text[fencing::kPolicyTextCapacity];
    std::size_t n = EncodePolicy(p, text);
    ASSERT_GT(n, 0u);
    EXPECT_STREQ(text, "v1 4294967295 1600 resource skip 1 1 7");
    Policy q;
    ASSERT_TRUE(DecodePolicy(std::string_view(text, n), &q));
    EXPECT_EQ(q.home_relid, p.home_relid);
    EXPECT_EQ(q.token_attnum, p.token_attnum);
    EXPECT_EQ(q.scope, p.scope);
    EXPECT_EQ(q.on_stale, p.on_stale);
    EXPECT_EQ(q.strict, p.strict);
    EXPECT_EQ(q.require_token, p.require_token);
    EXPECT_EQ(q.resource_attnum, p.resource_attnum);
}

TEST(PolicyEncoding, DecodesDefaults) {
    Policy p;
    ASSERT_TRUE(DecodePolicy("v1 16384 3 row error 0 0 0", &p));
    EXPECT_EQ(p.home_relid, 16384u);
    EXPECT_EQ(p.token_attnum, 3);
    EXPECT_EQ(p.scope, Scope::kRow);
    EXPECT_FALSE(p.strict);
}

TEST(PolicyEncoding, RejectsMalformedText) {
    Policy p;
    const char *bad[] = {
        "",                                 // empty
        "v2 16384 3 row error 0 0 0",       // unknown version
        "v1 0 3 row error 0 0 0",           // relid 0
        "v1 16384 0 row error 0 0 0",       // attnum 0
        "v1 16384 1601 row error 0 0 0",    // attnum above PostgreSQL's limit
        "v1 4294967296 3 row error 0 0 0",  // relid overflow
        "v1 16384 3 galaxy error 0 0 0",    // unknown scope
        "v1 16384 3 row ignore 0 0 0",      // unknown on_stale
        "v1 16384 3 row error 2 0 0",       // not a boolean
        "v1 16384 3 row error 0 0",         // missing field
        "v1 16384 3 row error 0 0 0 9",     // extra field
        "v1 16384 3 row error 0 0 0 ",      // trailing space
        "v1  16384 3 row error 0 0 0",      // double space
        "v1 16384 3 resource error 0 0 0",  // resource scope without a column
        "v1 16384 3 row error 0 0 4",       // a resource column outside resource scope
        "v1 -5 3 row error 0 0 0",          // sign
    };
    for (const char *text : bad) EXPECT_FALSE(DecodePolicy(text, &p)) << '"' << text << '"';
}
