// Unit tests for JudgeOffer: one row per case of the admission rule.
#include <gtest/gtest.h>

#include "core/policy.hpp"

using fencing::Admission;
using fencing::JudgeOffer;
using fencing::kMaxToken;
using fencing::Token;

namespace {

struct Row {
    Token offered;
    Token hwm;
    bool strict;
    Admission expected;
};

constexpr Row kRows[] = {
    {35, 34, false, Admission::kAdmitted},     // above, non-strict
    {34, 34, false, Admission::kAdmitted},     // equal, non-strict: the holder writes again
    {33, 34, false, Admission::kRefused},      // below, non-strict
    {35, 34, true, Admission::kAdmitted},      // above, strict
    {34, 34, true, Admission::kIfRaisedHere},  // equal, strict: only its own raiser
    {33, 34, true, Admission::kRefused},       // below, strict
    {0, 0, true, Admission::kIfRaisedHere},    // equal at the bottom
    {kMaxToken, kMaxToken, false, Admission::kAdmitted},
    {kMaxToken, kMaxToken, true, Admission::kIfRaisedHere},
    {0, kMaxToken, false, Admission::kRefused},
};

}  // namespace

TEST(JudgeOffer, Table) {
    for (const Row &row : kRows)
        EXPECT_EQ(JudgeOffer(row.offered, row.hwm, row.strict), row.expected)
            << "offered " << row.offered << " hwm " << row.hwm << " strict " << row.strict;
}

TEST(JudgeOffer, AdmittedExactlyWhenAdmits) {
    for (const Row &row : kRows)
        EXPECT_EQ(JudgeOffer(row.offered, row.hwm, row.strict) == Admission::kAdmitted,
                  fencing::Admits(row.offered, row.hwm, row.strict));
}
