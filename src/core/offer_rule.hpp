// Server-free core: the offer rule, which says whether a row write's token
// column offers a token of its own or leaves the token to the session.
#pragma once

#include <cstddef>

namespace fencing {

enum class RowEvent { kInsert, kUpdate, kDelete };

// What the guard sees of one row write, as far as the offer rule cares.
struct OfferFacts {
    RowEvent event;
    // The write carries a token from outside the statement: fencing.token,
    // or the token of the fenced_*() call running on the table.
    bool session_token;
    // The new row's token column is not NULL.
    bool column_value;
    // INSERT: the token column has a DEFAULT. A trigger cannot tell a value
    // the DEFAULT filled in from one the statement wrote.
    bool column_default;
    // UPDATE: the new row's token equals the old row's (both not NULL).
    bool same_as_old;
    // UPDATE: the SET list names the token column.
    bool named_in_set;
};

// One fact of a rule row: must hold, must not hold, or does not matter.
enum class Fact : char { kAny, kYes, kNo };

struct OfferRuleRow {
    const char *name;
    RowEvent event;
    Fact session_token;
    Fact column_value;
    Fact column_default;
    Fact same_as_old;
    Fact named_in_set;
    bool column_offers;  // the column's value is the statement's token
};

// The rule, one row per case. Exactly one row matches any facts.
extern const OfferRuleRow kOfferRule[];
extern const std::size_t kOfferRuleSize;

// The row of kOfferRule that matches the facts.
const OfferRuleRow &MatchOfferRule(const OfferFacts &facts) noexcept;

// Whether the token column's value is the token the statement offers.
inline bool ColumnOffersToken(const OfferFacts &facts) noexcept {
    return MatchOfferRule(facts).column_offers;
}

}  // namespace fencing
