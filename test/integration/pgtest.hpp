// Small libpq helpers for the integration tests: an RAII connection and
// result, plus a fixture that makes sure the extension exists.
//
// Every connection uses an empty conninfo, so libpq takes PGHOST, PGPORT,
// PGUSER and PGDATABASE from the environment (eval "$(test/cluster.sh env)").
#pragma once

#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

namespace pgtest {

// One PGresult, cleared on destruction.
class Result {
public:
    Result() = default;
    explicit Result(PGresult *res) : res_(res) {}
    Result(Result &&other) noexcept : res_(std::exchange(other.res_, nullptr)) {}
    Result &operator=(Result &&other) noexcept {
        if (this != &other) {
            if (res_ != nullptr) PQclear(res_);
            res_ = std::exchange(other.res_, nullptr);
        }
        return *this;
    }
    Result(const Result &) = delete;
    Result &operator=(const Result &) = delete;
    ~Result() {
        if (res_ != nullptr) PQclear(res_);
    }

    PGresult *get() const { return res_; }
    ExecStatusType status() const { return res_ == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(res_); }
    bool ok() const { return status() == PGRES_COMMAND_OK || status() == PGRES_TUPLES_OK; }

    // An error field (PG_DIAG_*), or "" when absent.
    std::string field(int code) const {
        if (res_ == nullptr) return "";
        const char *v = PQresultErrorField(res_, code);
        return v == nullptr ? "" : v;
    }
    std::string sqlstate() const { return field(PG_DIAG_SQLSTATE); }
    std::string error() const {
        return res_ == nullptr ? "no result" : PQresultErrorMessage(res_);
    }

    int rows() const { return res_ == nullptr ? 0 : PQntuples(res_); }
    bool is_null(int row, int col) const { return PQgetisnull(res_, row, col) != 0; }
    std::string text(int row = 0, int col = 0) const { return PQgetvalue(res_, row, col); }
    int64_t int64(int row = 0, int col = 0) const { return std::stoll(text(row, col)); }
    // Rows affected by INSERT/UPDATE/DELETE.
    int64_t affected() const {
        const char *n = res_ == nullptr ? "" : PQcmdTuples(res_);
        return *n == '\0' ? 0 : std::stoll(n);
    }

private:
    PGresult *res_ = nullptr;
};

// One connection, closed on destruction.
class Conn {
public:
    explicit Conn(const std::string &conninfo = "") : conn_(PQconnectdb(conninfo.c_str())) {}
    Conn(Conn &&other) noexcept : conn_(std::exchange(other.conn_, nullptr)) {}
    Conn(const Conn &) = delete;
    Conn &operator=(const Conn &) = delete;
    ~Conn() {
        if (conn_ != nullptr) PQfinish(conn_);
    }

    bool ok() const { return conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK; }
    std::string error() const { return conn_ == nullptr ? "no connection" : PQerrorMessage(conn_); }
    PGconn *get() const { return conn_; }
    int backend_pid() const { return PQbackendPID(conn_); }

    Result exec(const std::string &sql) const { return Result(PQexec(conn_, sql.c_str())); }

    // Text parameters; the server infers their types. std::nullopt is NULL.
    Result exec(const std::string &sql, const std::vector<std::optional<std::string>> &params) const {
        std::vector<const char *> values;
        values.reserve(params.size());
        for (const auto &p : params) values.push_back(p ? p->c_str() : nullptr);
        return Result(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                   values.data(), nullptr, nullptr, 0));
    }

private:
    PGconn *conn_;
};

// Asserts a statement succeeded, with the server's message when not.
#define PG_OK(expr)                                                   \
    do {                                                              \
        ::pgtest::Result pg_ok_res_ = (expr);                         \
        ASSERT_TRUE(pg_ok_res_.ok()) << #expr << ": " << pg_ok_res_.error(); \
    } while (0)

// A name no other test, run or process uses: prefix_<pid>_<counter>.
inline std::string UniqueName(const std::string &prefix) {
    static std::atomic<int> counter{0};
    return prefix + "_" + std::to_string(getpid()) + "_" + std::to_string(++counter);
}

inline std::string Quote(const std::string &literal) {
    std::string out = "'";
    for (char c : literal) {
        out += c;
        if (c == '\'') out += '\'';
    }
    return out + "'";
}

// Connects, creates the extension when missing, and runs the cleanup
// statements a test registered (in reverse order) when it ends.
class PgTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(conn_.ok()) << "cannot connect (source test/cluster.sh env first): "
                                << conn_.error();
        PG_OK(conn_.exec("SET client_min_messages = warning"));
        PG_OK(conn_.exec("CREATE EXTENSION IF NOT EXISTS fencing"));
    }

    void TearDown() override {
        if (!conn_.ok()) return;
        if (PQtransactionStatus(conn_.get()) != PQTRANS_IDLE)
            conn_.exec("ROLLBACK");  // a test left a transaction open
        for (auto it = cleanup_.rbegin(); it != cleanup_.rend(); ++it) {
            Result r = conn_.exec(*it);
            EXPECT_TRUE(r.ok()) << "cleanup " << *it << ": " << r.error();
        }
    }

    // Runs sql when the test ends, whatever its outcome.
    void AtEnd(const std::string &sql) { cleanup_.push_back(sql); }

    Conn conn_;

private:
    std::vector<std::string> cleanup_;
};

}  // namespace pgtest
