// fencing.hpp: a small RAII layer over libpq for the fencing extension.
// Copy this one header into your project (C++17, link with -lpq).
//
//   fencing::Connection conn("");                    // libpq conninfo / environment
//   fencing::Token t = *fencing::acquire(conn, "orders-shard-1", "worker-7", "30 s");
//   fencing::advance(conn, "inventory", t, R"({"item": "SKU-001"})");
//   fencing::fenced_update(conn, "inventory", t, R"({"item": "SKU-001"})", R"({"stock": 9})");
//   {
//       fencing::Transaction tx(conn, t);            // BEGIN; SET LOCAL fencing.token = t
//       tx.exec("UPDATE inventory SET stock = stock - 1 WHERE item = $1", {"SKU-001"});
//       tx.commit();                                 // the destructor rolls back otherwise
//   }
//
// A stale write throws fencing::StaleToken (SQLSTATE TF001, or 0 rows from
// fenced_update()), with the offered token and the high-water mark; a write
// without a token on a require_token table throws fencing::TokenRequired
// (TF002). Every other server error throws fencing::Error with its SQLSTATE.
//
// Tokens are std::int64_t: 0 to 9223372036854775807, all exact. They travel
// as decimal text parameters, so no driver-side conversion can round them.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <libpq-fe.h>

namespace fencing {

using Token = std::int64_t;

class Error : public std::runtime_error {
  public:
    Error(const std::string &message, std::string sqlstate, std::string detail = {})
        : std::runtime_error(message), sqlstate_(std::move(sqlstate)), detail_(std::move(detail)) {}
    const std::string &sqlstate() const noexcept { return sqlstate_; }
    const std::string &detail() const noexcept { return detail_; }

  private:
    std::string sqlstate_;
    std::string detail_;
};

// The lock was lost: re-acquire it to get a new token, re-read, then write.
class StaleToken : public Error {
  public:
    StaleToken(const std::string &message, std::string sqlstate, std::string detail,
               std::optional<Token> offered, std::optional<Token> hwm)
        : Error(message, std::move(sqlstate), std::move(detail)), offered_(offered), hwm_(hwm) {}
    std::optional<Token> offered() const noexcept { return offered_; }
    std::optional<Token> hwm() const noexcept { return hwm_; }

  private:
    std::optional<Token> offered_;
    std::optional<Token> hwm_;
};

class TokenRequired : public Error {
  public:
    using Error::Error;
};

inline Token parse_token(const std::string &text) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        throw std::invalid_argument("not a fencing token: " + text);
    errno = 0;
    char *end = nullptr;
    long long value = std::strtoll(text.c_str(), &end, 10);
    if (errno == ERANGE || *end != '\0')
        throw std::out_of_range("fencing token out of range: " + text);
    return static_cast<Token>(value);
}

// TF001's DETAIL reads "<key>: offered token T is below the high-water mark
// H." (strict mode: "is not above"). libpq hands DETAIL over as its own field
// (PG_DIAG_MESSAGE_DETAIL); the two numbers are inside its text, so that
// field is parsed, from its end (a key value cannot fool it).
inline bool parse_stale_detail(const std::string &detail, Token *offered, Token *hwm) {
    static const std::regex pattern(
        R"(offered token (\d+) is (?:below|not above) the high-water mark (\d+)(?: \(strict[^)]*\))?\.$)");
    std::smatch m;
    if (!std::regex_search(detail, m, pattern))
        return false;
    *offered = parse_token(m[1].str());
    *hwm = parse_token(m[2].str());
    return true;
}

// An owned PGresult.
class Result {
  public:
    explicit Result(PGresult *res) : res_(res, &PQclear) {}
    PGresult *get() const noexcept { return res_.get(); }
    int rows() const { return PQntuples(res_.get()); }
    bool is_null(int row, int col) const { return PQgetisnull(res_.get(), row, col) != 0; }
    std::string value(int row, int col) const { return PQgetvalue(res_.get(), row, col); }
    // Rows written by INSERT/UPDATE/DELETE.
    long affected() const { return std::strtol(PQcmdTuples(res_.get()), nullptr, 10); }

  private:
    std::unique_ptr<PGresult, decltype(&PQclear)> res_;
};

// Throws the typed error for a failed result.
[[noreturn]] inline void throw_error(const PGresult *res, PGconn *conn) {
    auto field = [res](int code) {
        const char *v = res != nullptr ? PQresultErrorField(res, code) : nullptr;
        return std::string(v != nullptr ? v : "");
    };
    std::string message = res != nullptr ? PQresultErrorMessage(res) : PQerrorMessage(conn);
    std::string sqlstate = field(PG_DIAG_SQLSTATE);
    std::string detail = field(PG_DIAG_MESSAGE_DETAIL);
    if (sqlstate == "TF001") {
        Token offered = 0, hwm = 0;
        if (parse_stale_detail(detail, &offered, &hwm))
            throw StaleToken(message, sqlstate, detail, offered, hwm);
        throw StaleToken(message, sqlstate, detail, std::nullopt, std::nullopt);
    }
    if (sqlstate == "TF002")
        throw TokenRequired(message, sqlstate, detail);
    throw Error(message, sqlstate, detail);
}

// An owned connection (movable, not copyable).
class Connection {
  public:
    explicit Connection(const std::string &conninfo) : conn_(PQconnectdb(conninfo.c_str()), &PQfinish) {
        if (PQstatus(conn_.get()) != CONNECTION_OK)
            throw Error(PQerrorMessage(conn_.get()), "08006");
    }
    PGconn *get() const noexcept { return conn_.get(); }

    // One statement with text parameters (tokens as decimal text).
    Result exec(const std::string &sql, const std::vector<std::optional<std::string>> &params = {}) {
        std::vector<const char *> values;
        values.reserve(params.size());
        for (const auto &p : params)
            values.push_back(p ? p->c_str() : nullptr);
        Result res(PQexecParams(conn_.get(), sql.c_str(), static_cast<int>(values.size()), nullptr,
                                values.data(), nullptr, nullptr, 0));
        ExecStatusType status = PQresultStatus(res.get());
        if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
            throw_error(res.get(), conn_.get());
        return res;
    }

  private:
    std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
};

// A transaction whose ordinary statements carry a token: BEGIN, then
// SET LOCAL fencing.token (as set_config(..., true), which takes a parameter).
// Rolls back in the destructor unless committed.
class Transaction {
  public:
    Transaction(Connection &conn, Token token) : conn_(conn) {
        conn_.exec("BEGIN");
        open_ = true;
        conn_.exec("SELECT set_config('fencing.token', $1, true)", {std::to_string(token)});
    }
    Transaction(const Transaction &) = delete;
    Transaction &operator=(const Transaction &) = delete;
    ~Transaction() {
        if (open_)
            PQclear(PQexec(conn_.get(), "ROLLBACK"));  // never throws
    }
    Result exec(const std::string &sql, const std::vector<std::optional<std::string>> &params = {}) {
        return conn_.exec(sql, params);
    }
    void commit() {
        open_ = false;  // a failed COMMIT has ended the transaction too
        conn_.exec("COMMIT");
    }

  private:
    Connection &conn_;
    bool open_ = false;
};

// fencing_acquire(): the new token, or nothing while another lease is live.
inline std::optional<Token> acquire(Connection &conn, const std::string &resource,
                                    const std::string &holder, const std::string &ttl) {
    Result r = conn.exec("SELECT fencing_acquire($1, $2, $3::interval)::text", {resource, holder, ttl});
    if (r.is_null(0, 0))
        return std::nullopt;
    return parse_token(r.value(0, 0));
}

inline bool release(Connection &conn, const std::string &resource, Token token) {
    return conn.exec("SELECT fencing_release($1, $2::fencing_token)", {resource, std::to_string(token)})
               .value(0, 0) == "t";
}

// fencing_advance(): raise the row's HWM to token before reading it.
inline bool advance(Connection &conn, const std::string &table, Token token, const std::string &key_json) {
    return conn.exec("SELECT fencing_advance($1::regclass, $2::fencing_token, $3::jsonb)",
                     {table, std::to_string(token), key_json})
               .value(0, 0) == "t";
}

inline Token high_water(Connection &conn, const std::string &table, const std::string &key_json) {
    return parse_token(
        conn.exec("SELECT fencing_high_water($1::regclass, $2::jsonb)::text", {table, key_json}).value(0, 0));
}

// fenced_update(): the rows written. 0 rows while the key's HWM is at or
// above the token (strict mode refuses an equal one) throws StaleToken with
// that HWM; 0 rows below it means there is no such row.
inline long fenced_update(Connection &conn, const std::string &table, Token token, const std::string &key_json,
                          const std::string &changes_json) {
    Result r = conn.exec("SELECT fenced_update($1::regclass, $2::fencing_token, $3::jsonb, $4::jsonb)",
                         {table, std::to_string(token), key_json, changes_json});
    long n = std::strtol(r.value(0, 0).c_str(), nullptr, 10);
    if (n == 0) {
        Token hwm = high_water(conn, table, key_json);
        if (hwm >= token)
            throw StaleToken("fenced_update() wrote 0 rows: stale token", "", "", token, hwm);
    }
    return n;
}

}  // namespace fencing
