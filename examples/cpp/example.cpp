// fencing from C++ with libpq, through fencing.hpp: a lease token, advance,
// read, fenced_update(), a transparent UPDATE under SET LOCAL fencing.token,
// then a stale holder's writes caught as fencing::StaleToken, a token-less
// write as fencing::TokenRequired, and the largest token without loss.
// Prints "ok - ..." lines; exits 1 on the first failed expectation.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "fencing.hpp"

namespace {

void ok(const std::string &what, bool cond) {
    std::printf("%s - %s\n", cond ? "ok" : "not ok", what.c_str());
    std::fflush(stdout);
    if (!cond)
        std::exit(1);
}

const std::string kTable = "ex_cpp";
const std::string kKey = R"({"item": "SKU-001"})";

struct Row {
    int stock;
    fencing::Token fence;
};

Row read(fencing::Connection &conn) {
    fencing::Result r = conn.exec("SELECT stock, fence::text FROM ex_cpp WHERE item = 'SKU-001'");
    return {std::atoi(r.value(0, 0).c_str()), fencing::parse_token(r.value(0, 1))};
}

}  // namespace

int main() {
    try {
        fencing::Connection conn("");
        conn.exec("SET client_min_messages = warning");
        conn.exec("DROP TABLE IF EXISTS ex_cpp");
        conn.exec("CREATE TABLE ex_cpp (item text PRIMARY KEY, stock int NOT NULL, fence fencing_token)");
        conn.exec("INSERT INTO ex_cpp VALUES ('SKU-001', 10, 0)");
        std::string resource =
            "ex-cpp-" + std::to_string(getpid()) + "-" +
            std::to_string(std::chrono::system_clock::now().time_since_epoch().count());

        // Holder A.
        fencing::Token a = fencing::acquire(conn, resource, "worker-a", "30 s").value();
        ok("acquired token " + std::to_string(a), a > 0);
        ok("advanced SKU-001 to " + std::to_string(a), fencing::advance(conn, kTable, a, kKey));
        Row row = read(conn);
        ok("fenced_update wrote 1 row",
           fencing::fenced_update(conn, kTable, a, kKey,
                                  R"({"stock": )" + std::to_string(row.stock - 1) + "}") == 1);
        {
            fencing::Transaction tx(conn, a);
            long n = tx.exec("UPDATE ex_cpp SET stock = stock - 1 WHERE item = $1", {"SKU-001"}).affected();
            tx.commit();
            ok("transparent UPDATE under SET LOCAL fencing.token wrote 1 row", n == 1);
        }
        row = read(conn);
        ok("stock 8, fence " + std::to_string(a), row.stock == 8 && row.fence == a);

        // A's lease ends; B takes the lock, advances, writes.
        fencing::release(conn, resource, a);
        fencing::Token b = fencing::acquire(conn, resource, "worker-b", "30 s").value();
        fencing::advance(conn, kTable, b, kKey);
        fencing::fenced_update(conn, kTable, b, kKey, R"({"stock": 7})");
        ok("holder B took token " + std::to_string(b) + " and wrote", b > a);

        // A writes with its old token.
        try {
            fencing::fenced_update(conn, kTable, a, kKey, R"({"stock": 99})");
            ok("stale fenced_update refused", false);
        } catch (const fencing::StaleToken &e) {
            ok("stale fenced_update -> StaleToken(offered " + std::to_string(*e.offered()) + ", hwm " +
                   std::to_string(*e.hwm()) + ")",
               e.offered() == a && e.hwm() == b);
        }
        try {
            fencing::Transaction tx(conn, a);
            tx.exec("UPDATE ex_cpp SET stock = 99 WHERE item = $1", {"SKU-001"});
            tx.commit();
            ok("stale transparent UPDATE refused", false);
        } catch (const fencing::StaleToken &e) {
            ok("stale UPDATE -> StaleToken " + e.sqlstate() + " (offered " + std::to_string(*e.offered()) +
                   ", hwm " + std::to_string(*e.hwm()) + ") from PG_DIAG_MESSAGE_DETAIL",
               e.sqlstate() == "TF001" && e.offered() == a && e.hwm() == b);
        }
        row = read(conn);
        ok("stock is B's: 7", row.stock == 7 && row.fence == b);
        fencing::release(conn, resource, b);

        // The largest token.
        const fencing::Token top = 9223372036854775807LL;
        conn.exec("SELECT fencing_resource_advance($1, $2::fencing_token)",
                  {resource + "-big", std::to_string(top - 1)});
        fencing::Token c = fencing::acquire(conn, resource + "-big", "worker-c", "30 s").value();
        ok("fencing_acquire handed out " + std::to_string(c), c == top);
        {
            fencing::Transaction tx(conn, c);
            tx.exec("UPDATE ex_cpp SET stock = 1 WHERE item = 'SKU-001'");
            tx.commit();
        }
        ok("token 9223372036854775807 stored exactly", read(conn).fence == top);
        try {
            fencing::Transaction tx(conn, top - 1);
            tx.exec("UPDATE ex_cpp SET stock = 2 WHERE item = 'SKU-001'");
            tx.commit();
            ok("stale big token refused", false);
        } catch (const fencing::StaleToken &e) {
            ok("stale 9223372036854775806 -> StaleToken(offered " + std::to_string(*e.offered()) + ", hwm " +
                   std::to_string(*e.hwm()) + ")",
               e.offered() == top - 1 && e.hwm() == top);
        }
        fencing::release(conn, resource + "-big", c);

        // TF002.
        conn.exec("SELECT fencing_protect('ex_cpp', require_token => true)");
        try {
            conn.exec("UPDATE ex_cpp SET stock = 0 WHERE item = 'SKU-001'");
            ok("write without a token refused", false);
        } catch (const fencing::TokenRequired &e) {
            ok("write without a token -> TokenRequired " + e.sqlstate(), e.sqlstate() == "TF002");
        }
        conn.exec("DROP TABLE ex_cpp");
    } catch (const fencing::Error &e) {
        std::printf("not ok - unexpected error %s: %s\n", e.sqlstate().c_str(), e.what());
        return 1;
    }
    return 0;
}
