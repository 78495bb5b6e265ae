// The offer rule (src/core/offer_rule.hpp): one test per row of kOfferRule,
// then the table as a whole.
#include <gtest/gtest.h>

#include <string>

#include "core/offer_rule.hpp"

namespace {

using fencing::ColumnOffersToken;
using fencing::kOfferRule;
using fencing::kOfferRuleSize;
using fencing::MatchOfferRule;
using fencing::OfferFacts;
using fencing::RowEvent;

// Facts in the order of OfferFacts' fields.
OfferFacts Facts(RowEvent event, bool session, bool value, bool has_default, bool same,
                 bool in_set) {
    return {event, session, value, has_default, same, in_set};
}

void ExpectRow(const OfferFacts &facts, const char *row, bool offers) {
    EXPECT_EQ(std::string(MatchOfferRule(facts).name), row);
    EXPECT_EQ(ColumnOffersToken(facts), offers);
}

TEST(OfferRule, DeleteOffersNothing) {
    ExpectRow(Facts(RowEvent::kDelete, true, true, false, true, true), "delete: no new row", false);
}

TEST(OfferRule, InsertWithNullColumnOffersNothing) {
    ExpectRow(Facts(RowEvent::kInsert, true, false, false, false, false), "insert: column NULL",
              false);
}

TEST(OfferRule, InsertWithoutSessionTokenOffersTheColumn) {
    ExpectRow(Facts(RowEvent::kInsert, false, true, true, false, false),
              "insert: column written, no session", true);
}

TEST(OfferRule, InsertWithoutDefaultOffersTheColumnUnderASessionToken) {
    ExpectRow(Facts(RowEvent::kInsert, true, true, false, false, false),
              "insert: column written, no DEFAULT", true);
}

TEST(OfferRule, InsertDefaultUnderASessionTokenOffersNothing) {
    ExpectRow(Facts(RowEvent::kInsert, true, true, true, false, false),
              "insert: DEFAULT under a session", false);
}

TEST(OfferRule, UpdateWithNullColumnOffersNothing) {
    ExpectRow(Facts(RowEvent::kUpdate, false, false, false, false, true), "update: column NULL",
              false);
}

TEST(OfferRule, UpdateWritingANewTokenOffersIt) {
    ExpectRow(Facts(RowEvent::kUpdate, true, true, false, false, true), "update: new token", true);
}

TEST(OfferRule, UpdateEchoUnderASessionTokenOffersNothing) {
    ExpectRow(Facts(RowEvent::kUpdate, true, true, false, true, true),
              "update: echo under a session", false);
}

TEST(OfferRule, UpdateNamingTheSameTokenOffersIt) {
    ExpectRow(Facts(RowEvent::kUpdate, false, true, false, true, true),
              "update: same token named in SET", true);
}

TEST(OfferRule, UpdateLeavingTheColumnOffersNothing) {
    ExpectRow(Facts(RowEvent::kUpdate, false, true, false, true, false), "update: column untouched",
              false);
}

// Every combination of facts the guard can gather.
template <typename F>
void ForEachFacts(F f) {
    for (RowEvent event : {RowEvent::kInsert, RowEvent::kUpdate, RowEvent::kDelete})
        for (int bits = 0; bits < 32; ++bits)
            f(Facts(event, bits & 1, bits & 2, bits & 4, bits & 8, bits & 16));
}

bool Holds(fencing::Fact fact, bool value) {
    return fact == fencing::Fact::kAny || (fact == fencing::Fact::kYes) == value;
}

TEST(OfferRule, ExactlyOneRowMatchesEveryCase) {
    ForEachFacts([](const OfferFacts &f) {
        int matches = 0;
        for (std::size_t i = 0; i < kOfferRuleSize; ++i) {
            const auto &r = kOfferRule[i];
            matches += r.event == f.event && Holds(r.session_token, f.session_token) &&
                       Holds(r.column_value, f.column_value) &&
                       Holds(r.column_default, f.column_default) &&
                       Holds(r.same_as_old, f.same_as_old) && Holds(r.named_in_set, f.named_in_set);
        }
        EXPECT_EQ(matches, 1) << "event " << static_cast<int>(f.event) << " session "
                              << f.session_token << " value " << f.column_value << " default "
                              << f.column_default << " same " << f.same_as_old << " in SET "
                              << f.named_in_set;
    });
}

// The rule as one boolean expression, as the guard wrote it before the table.
bool ExpressionRule(const OfferFacts &f) {
    if (f.event == RowEvent::kInsert)
        return f.column_value && !(f.session_token && f.column_default);
    if (f.event == RowEvent::kUpdate && f.column_value) {
        bool echo = f.session_token && f.same_as_old;
        return !echo && (f.named_in_set || !f.same_as_old);
    }
    return false;
}

TEST(OfferRule, TableAgreesWithTheExpression) {
    ForEachFacts([](const OfferFacts &f) { EXPECT_EQ(ColumnOffersToken(f), ExpressionRule(f)); });
}

}  // namespace
