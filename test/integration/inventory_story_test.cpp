// InventoryStory: the lost-update story the extension exists for, with real
// threads and a real pause.
//
//   inventory(item text primary key, stock int, fence fencing_token), stock 10.
//   A acquires the lock (token 33), reads stock 10, then stalls (a GC pause).
//   A's lease expires; B acquires (token 34), reads 10, writes 9, commits.
//   A wakes up and writes 10 - 1 = 9 with token 33: rejected (TF001, or 0 rows
//   from fenced_update). A re-acquires (token 35), re-reads 9, writes 8.
//   Final stock: 8, not 9.
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "pgtest.hpp"

namespace {

using pgtest::Conn;
using pgtest::Quote;
using pgtest::Result;
using namespace std::chrono_literals;

constexpr auto kGcPause = 300ms;

// The lock service: a monotonically increasing token per grant. Whoever
// asks gets the lock; the previous holder's lease is gone (that is the story).
class LockService {
public:
    explicit LockService(int64_t last_token) : last_(last_token) {}
    int64_t Acquire() {
        std::lock_guard<std::mutex> guard(mu_);
        return ++last_;
    }

private:
    std::mutex mu_;
    int64_t last_;
};

// A one-shot signal between threads.
class Signal {
public:
    void Notify() {
        {
            std::lock_guard<std::mutex> guard(mu_);
            set_ = true;
        }
        cv_.notify_all();
    }
    bool WaitFor(std::chrono::milliseconds timeout) {
        std::unique_lock<std::mutex> lock(mu_);
        return cv_.wait_for(lock, timeout, [this] { return set_; });
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool set_ = false;
};

enum class How { kSetLocal, kFencedUpdate };

// What one client saw; checked on the main thread.
struct WriteOutcome {
    std::string error;      // unexpected failure
    int64_t read_stock = -1;
    int64_t token = -1;
    bool committed = false;
    std::string sqlstate;   // of a failed write
    int64_t rows = -1;      // rows written
};

class InventoryStory : public pgtest::PgTest {
protected:
    void SetUp() override {
        PgTest::SetUp();
        if (HasFatalFailure()) return;
        table_ = pgtest::UniqueName("it_inventory");
        AtEnd("DROP TABLE IF EXISTS " + table_);
        PG_OK(conn_.exec("CREATE TABLE " + table_ +
                         " (item text PRIMARY KEY, stock int NOT NULL, fence fencing_token)"));
        Result prot = conn_.exec("SELECT scope FROM fencing_protected WHERE table_name = " +
                                 Quote(table_) + "::regclass");
        ASSERT_TRUE(prot.ok()) << prot.error();
        ASSERT_EQ(prot.rows(), 1) << "a fencing_token column must protect the table";
        ASSERT_EQ(prot.text(), "row");
        // Stock 10, last written by the previous holder (token 32).
        PG_OK(conn_.exec("INSERT INTO " + table_ + " VALUES ('widget', 10, 32)"));
    }

    static int64_t ReadStock(const Conn &c, const std::string &table, WriteOutcome *out) {
        Result r = c.exec("SELECT stock FROM " + table + " WHERE item = 'widget'");
        if (!r.ok() || r.rows() != 1) {
            out->error = "read: " + r.error();
            return -1;
        }
        out->read_stock = r.int64();
        return out->read_stock;
    }

    // Writes stock with token in its own transaction; records what happened.
    static void WriteStock(const Conn &c, const std::string &table, How how, int64_t token,
                           int64_t stock, WriteOutcome *out) {
        out->token = token;
        Result begin = c.exec("BEGIN");
        if (!begin.ok()) {
            out->error = "BEGIN: " + begin.error();
            return;
        }
        Result w;
        if (how == How::kSetLocal) {
            Result set = c.exec("SET LOCAL fencing.token = " + std::to_string(token));
            if (!set.ok()) {
                out->error = "SET LOCAL: " + set.error();
                c.exec("ROLLBACK");
                return;
            }
            w = c.exec("UPDATE " + table + " SET stock = $1 WHERE item = 'widget'",
                       {std::to_string(stock)});
            if (w.ok()) out->rows = w.affected();
        } else {
            w = c.exec("SELECT fenced_update($1::regclass, $2, '{\"item\": \"widget\"}',"
                       " jsonb_build_object('stock', $3::int))",
                       {table, std::to_string(token), std::to_string(stock)});
            if (w.ok()) out->rows = w.int64();
        }
        if (!w.ok()) {
            out->sqlstate = w.sqlstate();
            c.exec("ROLLBACK");
            return;
        }
        if (out->rows != 1) {
            c.exec("ROLLBACK");
            return;
        }
        Result commit = c.exec("COMMIT");
        out->committed = commit.ok() && std::string(PQcmdStatus(commit.get())) == "COMMIT";
        if (!out->committed) out->error = "COMMIT: " + commit.error();
    }

    void RunStory(How how) {
        LockService locks(32);
        Signal a_paused, b_done;
        WriteOutcome a_first, b, a_retry;
        const std::string table = table_;

        std::thread client_b([&] {
            Conn c;
            if (!c.ok()) {
                b.error = "connect: " + c.error();
                b_done.Notify();
                return;
            }
            // B only gets the lock once A's lease has run out, during A's pause.
            if (!a_paused.WaitFor(10s)) {
                b.error = "A never paused";
                b_done.Notify();
                return;
            }
            int64_t token = locks.Acquire();
            int64_t stock = ReadStock(c, table, &b);
            if (stock >= 0) WriteStock(c, table, how, token, stock - 1, &b);
            b_done.Notify();
        });

        std::thread client_a([&] {
            Conn c;
            if (!c.ok()) {
                a_first.error = "connect: " + c.error();
                a_paused.Notify();
                return;
            }
            int64_t token = locks.Acquire();
            int64_t stock = ReadStock(c, table, &a_first);
            a_paused.Notify();
            std::this_thread::sleep_for(kGcPause);  // the stop-the-world pause
            // Make sure B's write landed; normally it did long before the pause ended.
            if (!b_done.WaitFor(10s)) {
                a_first.error = "B never finished";
                return;
            }
            if (stock < 0) return;
            WriteStock(c, table, how, token, stock - 1, &a_first);
            if (a_first.committed || !a_first.error.empty()) return;
            // Rejected: re-acquire, re-read, write.
            int64_t fresh = locks.Acquire();
            int64_t again = ReadStock(c, table, &a_retry);
            if (again >= 0) WriteStock(c, table, how, fresh, again - 1, &a_retry);
        });

        client_a.join();
        client_b.join();

        ASSERT_EQ(a_first.error, "");
        ASSERT_EQ(b.error, "");
        ASSERT_EQ(a_retry.error, "");

        EXPECT_EQ(a_first.token, 33);
        EXPECT_EQ(a_first.read_stock, 10);
        EXPECT_EQ(b.token, 34);
        EXPECT_EQ(b.read_stock, 10);
        EXPECT_TRUE(b.committed) << "B holds the newest token and must win";

        EXPECT_FALSE(a_first.committed) << "A's write with stale token 33 must be rejected";
        if (how == How::kSetLocal) {
            EXPECT_EQ(a_first.sqlstate, "TF001");
        } else {
            EXPECT_EQ(a_first.sqlstate, "") << "fenced_update() reports stale as 0 rows";
            EXPECT_EQ(a_first.rows, 0);
        }

        EXPECT_EQ(a_retry.token, 35);
        EXPECT_EQ(a_retry.read_stock, 9);
        EXPECT_TRUE(a_retry.committed);

        Result final_row = conn_.exec("SELECT stock, fence::bigint FROM " + table_ +
                                      " WHERE item = 'widget'");
        ASSERT_TRUE(final_row.ok()) << final_row.error();
        ASSERT_EQ(final_row.rows(), 1);
        EXPECT_EQ(final_row.int64(0, 0), 8) << "expected 8, not 9: no update may be lost";
        EXPECT_EQ(final_row.int64(0, 1), 35);
        Result hwm = conn_.exec("SELECT fencing_high_water($1::regclass, '{\"item\": \"widget\"}')::bigint",
                                {table_});
        ASSERT_TRUE(hwm.ok()) << hwm.error();
        EXPECT_EQ(hwm.int64(), 35);
    }

    std::string table_;
};

TEST_F(InventoryStory, SetLocalTokenStaleWriteIsRejected) { RunStory(How::kSetLocal); }

TEST_F(InventoryStory, FencedUpdateStaleWriteWritesNothing) { RunStory(How::kFencedUpdate); }

// A keeps its transaction (and its token) open across the pause, as a client
// that read and writes in one READ COMMITTED transaction would. Its UPDATE
// meets B's committed row version and is judged against token 34.
TEST_F(InventoryStory, StaleWriteInsideLongTransactionIsRejected) {
    Conn a, b;
    ASSERT_TRUE(a.ok()) << a.error();
    ASSERT_TRUE(b.ok()) << b.error();
    Signal a_paused;
    std::string b_error;
    std::thread client_b([&] {
        if (!a_paused.WaitFor(10s)) {
            b_error = "A never paused";
            return;
        }
        Result r = b.exec("BEGIN; SET LOCAL fencing.token = 34;"
                          " UPDATE " + table_ + " SET stock = stock - 1 WHERE item = 'widget'; COMMIT");
        if (!r.ok()) b_error = r.error();
    });

    PG_OK(a.exec("BEGIN"));
    PG_OK(a.exec("SET LOCAL fencing.token = 33"));
    Result read = a.exec("SELECT stock FROM " + table_ + " WHERE item = 'widget'");
    a_paused.Notify();
    std::this_thread::sleep_for(kGcPause);
    client_b.join();
    ASSERT_EQ(b_error, "");
    ASSERT_TRUE(read.ok()) << read.error();
    ASSERT_EQ(read.int64(), 10);
    Result w = a.exec("UPDATE " + table_ + " SET stock = 9 WHERE item = 'widget'");
    EXPECT_FALSE(w.ok());
    EXPECT_EQ(w.sqlstate(), "TF001") << w.error();
    PG_OK(a.exec("ROLLBACK"));

    Result final_row = conn_.exec("SELECT stock, fence::bigint FROM " + table_);
    ASSERT_TRUE(final_row.ok()) << final_row.error();
    EXPECT_EQ(final_row.int64(0, 0), 9);
    EXPECT_EQ(final_row.int64(0, 1), 34);
}

// The same story with the database as the lock service: fencing_acquire()
// issues the tokens, with a real lease (TTL) that runs out during A's real
// pause. B's acquire waits for A's lease to expire, then fences A: it raises
// the resource's HWM to B's token before B reads. A's late write is refused,
// its renewal is refused, and its retry re-acquires. Final stock 8.
TEST_F(InventoryStory, LeasesFromTheDatabase) {
    const std::string ns = pgtest::UniqueName("it_leases");
    const std::string table = table_;
    PG_OK(conn_.exec("SELECT fencing_protect($1::regclass, scope => 'resource',"
                     " resource_column => 'item', resource_namespace => $2)",
                     {table, ns}));
    AtEnd("DELETE FROM fencing.lease WHERE namespace = " + Quote(ns));
    AtEnd("DELETE FROM fencing.resource_hwm WHERE namespace = " + Quote(ns));
    AtEnd("DELETE FROM fencing.resource_namespace WHERE name = " + Quote(ns));
    const auto acquire = [&](const Conn &c, const char *holder, const char *wait) {
        Result r = c.exec("SELECT fencing_acquire('widget', $1, '400 ms', $2::interval, $3)::bigint",
                          {holder, wait, ns});
        return r.ok() && r.rows() == 1 && !r.is_null(0, 0) ? r.int64() : int64_t{-1};
    };
    const auto write = [&](const Conn &c, int64_t token, int64_t stock) {
        Result w = c.exec("SELECT fenced_update($1::regclass, $2, '{\"item\": \"widget\"}',"
                          " jsonb_build_object('stock', $3::int))",
                          {table, std::to_string(token), std::to_string(stock)});
        return w.ok() ? w.int64() : int64_t{-1};
    };
    const auto read = [&](const Conn &c) {
        Result r = c.exec("SELECT stock FROM " + table + " WHERE item = 'widget'");
        return r.ok() && r.rows() == 1 ? r.int64() : int64_t{-1};
    };

    Conn a, b;
    ASSERT_TRUE(a.ok()) << a.error();
    ASSERT_TRUE(b.ok()) << b.error();
    Signal a_paused;
    int64_t b_token = -1, b_read = -1, b_rows = -1, b_busy = -2;
    std::thread client_b([&] {
        if (!a_paused.WaitFor(10s)) return;
        b_busy = acquire(b, "B", "0");               // A's lease is still live: NULL
        b_token = acquire(b, "B", "5 seconds");      // waits for A's lease to run out
        b_read = read(b);
        if (b_token > 0 && b_read >= 0) b_rows = write(b, b_token, b_read - 1);
        b.exec("SELECT fencing_release('widget', $1, $2)", {std::to_string(b_token), ns});
    });

    int64_t a_token = acquire(a, "A", "0");
    int64_t a_read = read(a);
    a_paused.Notify();
    std::this_thread::sleep_for(1000ms);  // a pause well past the 400 ms TTL
    client_b.join();
    ASSERT_GT(a_token, 0) << "A must get the free lease";
    EXPECT_EQ(a_read, 10);
    EXPECT_EQ(b_busy, -1) << "no second lease while A's is live";
    ASSERT_GT(b_token, a_token) << "a lease token above every earlier one";
    EXPECT_EQ(b_read, 10) << "B reads after A's lease expired";
    EXPECT_EQ(b_rows, 1);

    // A wakes up: its renewal and its write with the old token are refused.
    Result renew = a.exec("SELECT fencing_renew('widget', $1, '400 ms', $2)",
                          {std::to_string(a_token), ns});
    ASSERT_TRUE(renew.ok()) << renew.error();
    EXPECT_EQ(renew.text(), "f") << "a lost lease cannot be renewed";
    EXPECT_EQ(write(a, a_token, a_read - 1), 0) << "A's stale write must write nothing";
    // A re-acquires (B released), re-reads, writes.
    int64_t a_again = acquire(a, "A", "5 seconds");
    ASSERT_GT(a_again, b_token);
    int64_t a_reread = read(a);
    EXPECT_EQ(a_reread, 9);
    EXPECT_EQ(write(a, a_again, a_reread - 1), 1);

    Result final_row = conn_.exec("SELECT stock, fence::bigint FROM " + table_);
    ASSERT_TRUE(final_row.ok()) << final_row.error();
    EXPECT_EQ(final_row.int64(0, 0), 8) << "expected 8, not 9: no update may be lost";
    EXPECT_EQ(final_row.int64(0, 1), a_again);
}

}  // namespace
