#include "core/offer_rule.hpp"

namespace fencing {
namespace {

constexpr Fact kAny = Fact::kAny;
constexpr Fact kYes = Fact::kYes;
constexpr Fact kNo = Fact::kNo;

bool Holds(Fact fact, bool value) noexcept {
    return fact == kAny || (fact == kYes) == value;
}

bool Matches(const OfferRuleRow &row, const OfferFacts &f) noexcept {
    return row.event == f.event && Holds(row.session_token, f.session_token) &&
           Holds(row.column_value, f.column_value) && Holds(row.column_default, f.column_default) &&
           Holds(row.same_as_old, f.same_as_old) && Holds(row.named_in_set, f.named_in_set);
}

}  // namespace

// A column value offered while a session token is set must agree with it
// (ResolveOfferedToken refuses a conflict). The two rows that do not offer a
// written value under a session token:
//   * the DEFAULT rule: an INSERT's DEFAULT is not the statement offering a
//     token;
//   * the echo rule: an UPDATE that writes the row's current token back (an
//     ORM writing every column it read: Django's save(), Hibernate's full-row
//     UPDATE) offers no token of its own. "Current" is the locked version the
//     guard sees, so a value read before a newer write is no echo.
// clang-format off
const OfferRuleRow kOfferRule[] = {
    // name                                  event               session column default same  in SET  offers
    {"delete: no new row",                   RowEvent::kDelete, kAny,   kAny,  kAny,   kAny, kAny,   false},
    {"insert: column NULL",                  RowEvent::kInsert, kAny,   kNo,   kAny,   kAny, kAny,   false},
    {"insert: column written, no session",   RowEvent::kInsert, kNo,    kYes,  kAny,   kAny, kAny,   true},
    {"insert: column written, no DEFAULT",   RowEvent::kInsert, kYes,   kYes,  kNo,    kAny, kAny,   true},
    {"insert: DEFAULT under a session",      RowEvent::kInsert, kYes,   kYes,  kYes,   kAny, kAny,   false},
    {"update: column NULL",                  RowEvent::kUpdate, kAny,   kNo,   kAny,   kAny, kAny,   false},
    {"update: new token",                    RowEvent::kUpdate, kAny,   kYes,  kAny,   kNo,  kAny,   true},
    {"update: echo under a session",         RowEvent::kUpdate, kYes,   kYes,  kAny,   kYes, kAny,   false},
    {"update: same token named in SET",      RowEvent::kUpdate, kNo,    kYes,  kAny,   kYes, kYes,   true},
    {"update: column untouched",             RowEvent::kUpdate, kNo,    kYes,  kAny,   kYes, kNo,    false},
};
// clang-format on
const std::size_t kOfferRuleSize = sizeof(kOfferRule) / sizeof(kOfferRule[0]);

const OfferRuleRow &MatchOfferRule(const OfferFacts &facts) noexcept {
    for (std::size_t i = 0; i < kOfferRuleSize; ++i)
        if (Matches(kOfferRule[i], facts))
            return kOfferRule[i];
    // Unreachable: the rows cover every case (test/unit/offer_rule_test.cpp).
    return kOfferRule[0];
}

}  // namespace fencing
