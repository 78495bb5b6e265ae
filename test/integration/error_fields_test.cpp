// ErrorFields: what a client gets back from a stale write. SQLSTATE TF001,
// a DETAIL naming the offered token and the high-water mark, a HINT that
// says the lock was lost, and the table in PG_DIAG_SCHEMA_NAME /
// PG_DIAG_TABLE_NAME, for every scope and for a writer that was blocked
// behind the newer one.
#include <cctype>
#include <regex>
#include <thread>

#include "pgtest.hpp"

namespace {

using pgtest::Conn;
using pgtest::Quote;
using pgtest::Result;
using namespace std::chrono_literals;

constexpr int64_t kHwm = 4343;
constexpr int64_t kStale = 4242;

bool HasNumber(const std::string &text, int64_t n) {
    return std::regex_search(text, std::regex("(^|[^0-9])" + std::to_string(n) + "([^0-9]|$)"));
}

std::string Lower(std::string s) {
    for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

class ErrorFields : public pgtest::PgTest {
protected:
    void SetUp() override {
        PgTest::SetUp();
        if (HasFatalFailure()) return;
        table_ = pgtest::UniqueName("it_errf");
        AtEnd("DROP TABLE IF EXISTS " + table_);
        PG_OK(conn_.exec("CREATE TABLE " + table_ +
                         " (id int PRIMARY KEY, res text NOT NULL, v int, fence fencing_token)"));
    }

    // A stale write's error, field by field.
    void ExpectStaleError(const Result &r, int64_t offered, int64_t hwm) {
        ASSERT_FALSE(r.ok()) << "the stale write succeeded";
        EXPECT_EQ(r.sqlstate(), "TF001") << r.error();
        const std::string detail = r.field(PG_DIAG_MESSAGE_DETAIL);
        EXPECT_TRUE(HasNumber(detail, offered)) << "DETAIL lacks offered token " << offered << ": " << detail;
        EXPECT_TRUE(HasNumber(detail, hwm)) << "DETAIL lacks high-water mark " << hwm << ": " << detail;
        const std::string hint = r.field(PG_DIAG_MESSAGE_HINT);
        EXPECT_NE(Lower(hint).find("lock"), std::string::npos) << "HINT: " << hint;
        EXPECT_EQ(r.field(PG_DIAG_TABLE_NAME), table_);
        EXPECT_EQ(r.field(PG_DIAG_SCHEMA_NAME), "public");
        EXPECT_NE(r.field(PG_DIAG_MESSAGE_PRIMARY).find(table_), std::string::npos)
            << "message should name the table: " << r.field(PG_DIAG_MESSAGE_PRIMARY);
        EXPECT_EQ(r.field(PG_DIAG_SEVERITY_NONLOCALIZED), "ERROR");
    }

    std::string table_;
};

TEST_F(ErrorFields, RowScopeStaleUpdateViaTokenColumn) {
    PG_OK(conn_.exec("INSERT INTO " + table_ + " VALUES (1, 'a', 0, " + std::to_string(kHwm) + ")"));
    Result r = conn_.exec("UPDATE " + table_ + " SET v = 1, fence = " + std::to_string(kStale) +
                          " WHERE id = 1");
    ExpectStaleError(r, kStale, kHwm);
}

TEST_F(ErrorFields, RowScopeStaleDeleteViaSetLocal) {
    PG_OK(conn_.exec("INSERT INTO " + table_ + " VALUES (1, 'a', 0, " + std::to_string(kHwm) + ")"));
    PG_OK(conn_.exec("BEGIN"));
    PG_OK(conn_.exec("SET LOCAL fencing.token = " + std::to_string(kStale)));
    Result r = conn_.exec("DELETE FROM " + table_ + " WHERE id = 1");
    ExpectStaleError(r, kStale, kHwm);
    PG_OK(conn_.exec("ROLLBACK"));
    Result n = conn_.exec("SELECT count(*) FROM " + table_);
    ASSERT_TRUE(n.ok()) << n.error();
    EXPECT_EQ(n.int64(), 1);
}

TEST_F(ErrorFields, ResourceScope) {
    const std::string ns = pgtest::UniqueName("it_errf_ns");
    AtEnd("SELECT fencing_resource_reset('printer', " + Quote(ns) + ")");
    PG_OK(conn_.exec("SELECT fencing_protect(" + Quote(table_) +
                     ", scope => 'resource', resource_column => 'res', resource_namespace => " +
                     Quote(ns) + ")"));
    PG_OK(conn_.exec("INSERT INTO " + table_ + " VALUES (1, 'printer', 0, " + std::to_string(kHwm) + ")"));
    PG_OK(conn_.exec("BEGIN"));
    PG_OK(conn_.exec("SET LOCAL fencing.token = " + std::to_string(kStale)));
    // Another row, same resource: the resource's HWM rejects it.
    Result r = conn_.exec("INSERT INTO " + table_ + " (id, res, v) VALUES (2, 'printer', 1)");
    ExpectStaleError(r, kStale, kHwm);
    PG_OK(conn_.exec("ROLLBACK"));
}

TEST_F(ErrorFields, TableScope) {
    PG_OK(conn_.exec("SELECT fencing_protect(" + Quote(table_) + ", scope => 'table')"));
    PG_OK(conn_.exec("INSERT INTO " + table_ + " VALUES (1, 'a', 0, " + std::to_string(kHwm) + ")"));
    Result r = conn_.exec("INSERT INTO " + table_ + " VALUES (2, 'b', 0, " + std::to_string(kStale) + ")");
    ExpectStaleError(r, kStale, kHwm);
}

// The lower writer blocks on the row the higher one holds; once the higher
// one commits, the lower one is judged against the new row version.
TEST_F(ErrorFields, BlockedLowerWriterGetsTF001AfterTheHigherCommits) {
    PG_OK(conn_.exec("INSERT INTO " + table_ + " VALUES (1, 'a', 0, 1)"));
    Conn high, low;
    ASSERT_TRUE(high.ok()) << high.error();
    ASSERT_TRUE(low.ok()) << low.error();
    PG_OK(high.exec("BEGIN"));
    PG_OK(high.exec("UPDATE " + table_ + " SET v = 1, fence = " + std::to_string(kHwm) + " WHERE id = 1"));

    const std::string pid = std::to_string(low.backend_pid());
    Result low_result;
    std::thread writer([&] {
        low_result = low.exec("UPDATE " + table_ + " SET v = 2, fence = " + std::to_string(kStale) +
                              " WHERE id = 1");
    });
    // Wait until the lower writer is really blocked on the row lock.
    bool blocked = false;
    for (auto deadline = std::chrono::steady_clock::now() + 10s;
         !blocked && std::chrono::steady_clock::now() < deadline;) {
        Result w = conn_.exec("SELECT wait_event_type FROM pg_stat_activity WHERE pid = " + pid);
        blocked = w.ok() && w.rows() == 1 && w.text() == "Lock";
        if (!blocked) std::this_thread::sleep_for(10ms);
    }
    std::this_thread::sleep_for(100ms);  // and keep it waiting a while
    PG_OK(high.exec("COMMIT"));
    writer.join();
    ASSERT_TRUE(blocked) << "the lower writer never waited for the row lock";
    ExpectStaleError(low_result, kStale, kHwm);

    Result row = conn_.exec("SELECT v, fence::bigint FROM " + table_ + " WHERE id = 1");
    ASSERT_TRUE(row.ok()) << row.error();
    EXPECT_EQ(row.int64(0, 0), 1);
    EXPECT_EQ(row.int64(0, 1), kHwm);
}

}  // namespace
