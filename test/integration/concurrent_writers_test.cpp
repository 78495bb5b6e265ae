// ConcurrentWriters: N threads, each on its own connection, make M fenced
// writes with random tokens to K resources, for each way of writing:
//
//   RowScope       UPDATE t SET fence = $tok, ...  (row scope: the row is the HWM)
//   ResourceScope  the same UPDATE on a table protected with scope => 'resource'
//   FencedUpdate   SELECT fenced_update(t, $tok, key, changes) on a row-scope table
//   ResourceScopeInserts  resource scope, but every write INSERTs a new row and
//                  no resource has an HWM yet: only the extension's own
//                  fencing.resource_hwm row orders the writers, and the first
//                  writes race to create it
//
// Each write is its own READ COMMITTED transaction. An accepted write also
// inserts a log row (resource, token, write id, txid) whose seq comes from
// nextval() AFTER the fenced write: the fenced write holds the resource's lock
// (the row lock, and for resource scope the fencing.resource_hwm row lock)
// until commit, so per resource the seq order is the commit order. A rejected
// write (TF001, 40001, or 0 rows from fenced_update) rolls back, so the log
// holds exactly the accepted writes.
//
// Two token sources, each a TEST_P over the four modes:
//   UniformTokens  tokens uniform in 1..1000, a fixed seed per thread
//   RisingTokens   a shared lock-service clock, a third of the tokens a little
//                  stale: many more accepted writes, and close tokens racing
//
// Afterwards, per resource: the accepted tokens never decrease in commit
// order, the HWM (every way of reading it) equals the largest accepted token,
// the row holds the last accepted write (with inserts: the table holds exactly
// the accepted rows), and something was accepted. Overall, something was
// rejected, and nothing failed in any other way.
#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <thread>

#include "pgtest.hpp"

namespace {

using pgtest::Conn;
using pgtest::Quote;
using pgtest::Result;

constexpr int kThreads = 8;     // N
constexpr int kWrites = 200;    // M per thread
constexpr int kResources = 4;   // K
constexpr int kMaxToken = 1000;

enum class Mode { kRowScope, kResourceScope, kFencedUpdate, kResourceScopeInserts };

std::string ModeName(const testing::TestParamInfo<Mode> &info) {
    switch (info.param) {
        case Mode::kRowScope: return "RowScope";
        case Mode::kResourceScope: return "ResourceScope";
        case Mode::kFencedUpdate: return "FencedUpdate";
        case Mode::kResourceScopeInserts: return "ResourceScopeInserts";
    }
    return "Unknown";
}

// For gtest's "where GetParam() = ..." lines.
void PrintTo(Mode mode, std::ostream *os) { *os << ModeName(testing::TestParamInfo<Mode>(mode, 0)); }

struct ThreadOutcome {
    int accepted = 0;
    int rejected_tf001 = 0;
    int rejected_40001 = 0;
    int rejected_zero_rows = 0;
    std::vector<std::string> unexpected;  // anything else: fails the test
};

class ConcurrentWriters : public pgtest::PgTest, public testing::WithParamInterface<Mode> {
protected:
    void SetUp() override {
        PgTest::SetUp();
        if (HasFatalFailure()) return;
        table_ = pgtest::UniqueName("it_cw_data");
        log_ = pgtest::UniqueName("it_cw_log");
        seq_ = pgtest::UniqueName("it_cw_seq");
        ns_ = pgtest::UniqueName("it_cw_ns");
        AtEnd("DROP TABLE IF EXISTS " + table_);
        AtEnd("DROP TABLE IF EXISTS " + log_);
        AtEnd("DROP SEQUENCE IF EXISTS " + seq_);

        PG_OK(conn_.exec("CREATE SEQUENCE " + seq_));
        PG_OK(conn_.exec("CREATE TABLE " + log_ +
                         " (seq bigint PRIMARY KEY, res int NOT NULL, token bigint NOT NULL,"
                         "  write_id bigint NOT NULL, txid xid8 NOT NULL)"));
        // The fencing_token column protects the table (row scope) on creation.
        PG_OK(conn_.exec("CREATE TABLE " + table_ +
                         " (id int PRIMARY KEY, res text NOT NULL, val bigint NOT NULL,"
                         "  fence fencing_token)"));
        if (ResourceScope()) {
            for (int r = 0; r < kResources; ++r)
                AtEnd("SELECT fencing_resource_reset(" + Quote(ResourceName(r)) + ", " +
                      Quote(ns_) + ")");
            PG_OK(conn_.exec("SELECT fencing_protect(" + Quote(table_) +
                             ", scope => 'resource', resource_column => 'res',"
                             " resource_namespace => " + Quote(ns_) + ")"));
            Result scope = conn_.exec("SELECT scope FROM fencing_protected WHERE table_name = " +
                                      Quote(table_) + "::regclass");
            ASSERT_TRUE(scope.ok()) << scope.error();
            ASSERT_EQ(scope.rows(), 1);
            ASSERT_EQ(scope.text(), "resource");
        }
        // Every resource starts at token 0, below every token the writers use;
        // except with inserts, where the resources have no HWM at all yet.
        for (int r = 0; r < kResources && GetParam() != Mode::kResourceScopeInserts; ++r)
            PG_OK(conn_.exec("INSERT INTO " + table_ + " VALUES ($1, $2, -1, 0)",
                             {std::to_string(r), ResourceName(r)}));
    }

    std::string ResourceName(int r) const { return "res-" + std::to_string(r); }
    bool ResourceScope() const {
        return GetParam() == Mode::kResourceScope || GetParam() == Mode::kResourceScopeInserts;
    }

    // One write in its own transaction; updates out.
    void OneWrite(const Conn &c, int resource, int64_t token, int64_t write_id,
                  ThreadOutcome *out) const {
        Result begin = c.exec("BEGIN");
        if (!begin.ok()) {
            out->unexpected.push_back("BEGIN: " + begin.error());
            return;
        }
        const std::string tok = std::to_string(token);
        const std::string wid = std::to_string(write_id);
        Result w;
        switch (GetParam()) {
            case Mode::kRowScope:
                w = c.exec("UPDATE " + table_ + " SET fence = $1, val = $2 WHERE id = $3",
                           {tok, wid, std::to_string(resource)});
                break;
            case Mode::kResourceScope:
                w = c.exec("UPDATE " + table_ + " SET fence = $1, val = $2 WHERE res = $3",
                           {tok, wid, ResourceName(resource)});
                break;
            case Mode::kFencedUpdate:
                w = c.exec("SELECT fenced_update($1::regclass, $2::fencing_token,"
                           " jsonb_build_object('id', $3::int),"
                           " jsonb_build_object('val', $4::bigint))",
                           {table_, tok, std::to_string(resource), wid});
                break;
            case Mode::kResourceScopeInserts:
                w = c.exec("INSERT INTO " + table_ + " (id, res, val, fence) VALUES ($1::int, $2, $1::int, $3)",
                           {wid, ResourceName(resource), tok});
                break;
        }
        bool accepted = false;
        if (w.ok()) {
            int64_t written = GetParam() == Mode::kFencedUpdate ? w.int64() : w.affected();
            if (written == 1) {
                accepted = true;
            } else if (written == 0 && GetParam() == Mode::kFencedUpdate) {
                out->rejected_zero_rows++;
            } else {
                out->unexpected.push_back("write affected " + std::to_string(written) +
                                          " rows (token " + tok + ")");
            }
        } else if (w.sqlstate() == "TF001") {
            out->rejected_tf001++;
        } else if (w.sqlstate() == "40001") {
            out->rejected_40001++;
        } else {
            out->unexpected.push_back("write failed [" + w.sqlstate() + "]: " + w.error());
        }
        if (!accepted) {
            Result rb = c.exec("ROLLBACK");
            if (!rb.ok()) out->unexpected.push_back("ROLLBACK: " + rb.error());
            return;
        }
        // Still holding the resource's lock: nextval() orders commits per resource.
        Result log = c.exec("INSERT INTO " + log_ + " VALUES (nextval(" + Quote(seq_) +
                                "), $1, $2, $3, pg_current_xact_id())",
                            {std::to_string(resource), tok, wid});
        if (!log.ok()) {
            out->unexpected.push_back("log insert: " + log.error());
            c.exec("ROLLBACK");
            return;
        }
        Result commit = c.exec("COMMIT");
        if (!commit.ok() || std::string(PQcmdStatus(commit.get())) != "COMMIT") {
            out->unexpected.push_back("COMMIT: " + commit.error());
            return;
        }
        out->accepted++;
    }

    // Where the writers' tokens come from.
    enum class Tokens {
        kUniform,  // uniform in 1..kMaxToken: the HWM soon nears the top, most writes lose
        kRising,   // a shared lock-service clock: mostly fresh tokens, a third of them
                   // a little stale, so writers with close tokens collide and block
    };

    void Writer(int thread, Tokens tokens, std::atomic<int> *ready, std::atomic<bool> *go,
                ThreadOutcome *out) {
        Conn c;
        if (!c.ok()) {
            out->unexpected.push_back("connect: " + c.error());
            ready->fetch_add(1);
            return;
        }
        c.exec("SET client_min_messages = warning");
        std::mt19937_64 rng(0x5eed0000u + static_cast<unsigned>(thread));  // fixed per thread
        std::uniform_int_distribution<int> pick_resource(0, kResources - 1);
        std::uniform_int_distribution<int64_t> pick_token(1, kMaxToken);
        std::uniform_int_distribution<int> pick_stale(0, 2);
        std::uniform_int_distribution<int64_t> pick_lag(1, 24);
        ready->fetch_add(1);
        while (!go->load()) std::this_thread::yield();
        for (int i = 0; i < kWrites; ++i) {
            int resource = pick_resource(rng);
            int64_t token;
            if (tokens == Tokens::kUniform) {
                token = pick_token(rng);
            } else {
                token = lock_clock_.fetch_add(1) + 1;
                if (pick_stale(rng) == 0) token = std::max<int64_t>(1, token - pick_lag(rng));
            }
            OneWrite(c, resource, token, int64_t{thread} * kWrites + i, out);
            if (out->unexpected.size() > 5) return;  // something is badly wrong; stop early
        }
    }

    // The HWM as fencing_high_water() reports it, plus the other views of it.
    std::vector<int64_t> HighWaterViews(int r) {
        std::vector<int64_t> views;
        auto one = [&](const std::string &sql, const std::vector<std::optional<std::string>> &p) {
            Result res = conn_.exec(sql, p);
            EXPECT_TRUE(res.ok()) << sql << ": " << res.error();
            EXPECT_EQ(res.rows(), 1) << sql;
            if (res.ok() && res.rows() == 1 && !res.is_null(0, 0)) views.push_back(res.int64());
            else views.push_back(-1);
        };
        if (GetParam() == Mode::kResourceScopeInserts)
            one("SELECT max(fence)::bigint FROM " + table_ + " WHERE res = $1", {ResourceName(r)});
        else
            one("SELECT fence::bigint FROM " + table_ + " WHERE id = $1", {std::to_string(r)});
        if (ResourceScope()) {
            one("SELECT fencing_high_water($1::regclass, jsonb_build_object('res', $2::text))::bigint",
                {table_, ResourceName(r)});
            one("SELECT fencing_resource_high_water($1, $2)::bigint", {ResourceName(r), ns_});
        } else {
            one("SELECT fencing_high_water($1::regclass, jsonb_build_object('id', $2::int))::bigint",
                {table_, std::to_string(r)});
        }
        return views;
    }

    void RunWriters(Tokens tokens);

    std::string table_, log_, seq_, ns_;
    std::atomic<int64_t> lock_clock_{0};
};

void ConcurrentWriters::RunWriters(Tokens tokens) {
    std::vector<ThreadOutcome> outcomes(kThreads);
    std::vector<std::thread> threads;
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([this, t, tokens, &ready, &go, &outcomes] {
            Writer(t, tokens, &ready, &go, &outcomes[t]);
        });
    while (ready.load() < kThreads) std::this_thread::yield();
    go.store(true);
    for (auto &th : threads) th.join();

    int accepted = 0, tf001 = 0, serialization = 0, zero_rows = 0;
    for (int t = 0; t < kThreads; ++t) {
        const ThreadOutcome &o = outcomes[t];
        for (const auto &msg : o.unexpected) ADD_FAILURE() << "thread " << t << ": " << msg;
        accepted += o.accepted;
        tf001 += o.rejected_tf001;
        serialization += o.rejected_40001;
        zero_rows += o.rejected_zero_rows;
    }
    ASSERT_FALSE(HasFailure());
    int rejected = tf001 + serialization + zero_rows;
    EXPECT_EQ(accepted + rejected, kThreads * kWrites);
    EXPECT_GT(rejected, 0) << "no write was rejected: the test proves nothing";
    if (GetParam() == Mode::kFencedUpdate) {
        EXPECT_EQ(tf001, 0) << "fenced_update() must report a stale token as 0 rows, not TF001";
        EXPECT_GT(zero_rows, 0);
    } else {
        EXPECT_GT(tf001, 0);
    }
    std::printf("    accepted %d, rejected %d (TF001 %d, 40001 %d, 0 rows %d)\n", accepted,
                rejected, tf001, serialization, zero_rows);
    RecordProperty("accepted", accepted);
    RecordProperty("rejected", rejected);

    // The log, in commit order per resource.
    Result log = conn_.exec("SELECT res, token, write_id FROM " + log_ + " ORDER BY seq");
    ASSERT_TRUE(log.ok()) << log.error();
    ASSERT_EQ(log.rows(), accepted) << "the log must hold exactly the accepted writes";
    std::map<int, std::vector<std::pair<int64_t, int64_t>>> per_resource;  // (token, write id)
    for (int i = 0; i < log.rows(); ++i)
        per_resource[static_cast<int>(log.int64(i, 0))].emplace_back(log.int64(i, 1),
                                                                     log.int64(i, 2));

    for (int r = 0; r < kResources; ++r) {
        SCOPED_TRACE("resource " + std::to_string(r));
        const auto &writes = per_resource[r];
        ASSERT_GT(writes.size(), 0u) << "no write to this resource was accepted";
        int64_t max_token = 0;
        int decreases = 0;
        for (size_t i = 0; i < writes.size(); ++i) {
            if (i > 0 && writes[i].first < writes[i - 1].first && decreases++ == 0)
                ADD_FAILURE() << "accepted token went down at commit #" << i << ": "
                              << writes[i].first << " (write id " << writes[i].second
                              << ") after " << writes[i - 1].first << " (write id "
                              << writes[i - 1].second << ")";
            max_token = std::max(max_token, writes[i].first);
        }
        EXPECT_EQ(decreases, 0) << "accepted tokens must never decrease in commit order";
        for (int64_t hwm : HighWaterViews(r))
            EXPECT_EQ(hwm, max_token) << "HWM must equal the largest accepted token";
        if (GetParam() == Mode::kResourceScopeInserts) {
            // The table holds exactly the logged rows of this resource.
            Result n = conn_.exec("SELECT count(*) FROM " + table_ + " t JOIN " + log_ +
                                      " l ON l.write_id = t.id AND l.token = t.fence::bigint"
                                      " WHERE t.res = $1 AND l.res = $2",
                                  {ResourceName(r), std::to_string(r)});
            ASSERT_TRUE(n.ok()) << n.error();
            EXPECT_EQ(n.int64(), static_cast<int64_t>(writes.size()));
            Result all = conn_.exec("SELECT count(*) FROM " + table_ + " WHERE res = $1",
                                    {ResourceName(r)});
            ASSERT_TRUE(all.ok()) << all.error();
            EXPECT_EQ(all.int64(), static_cast<int64_t>(writes.size()));
            continue;
        }
        // The row holds what the last committed writer wrote.
        Result row = conn_.exec("SELECT val FROM " + table_ + " WHERE id = $1", {std::to_string(r)});
        ASSERT_TRUE(row.ok()) << row.error();
        ASSERT_EQ(row.rows(), 1);
        EXPECT_EQ(row.int64(), writes.back().second) << "the last accepted write must be the row's value";
    }
}

// The brief's setup: tokens uniform in 1..1000, fixed seed per thread.
TEST_P(ConcurrentWriters, UniformTokens) { RunWriters(Tokens::kUniform); }

// Many more accepted writes, and writers with close tokens racing for the
// same resource (lower ones blocked behind higher ones).
TEST_P(ConcurrentWriters, RisingTokens) { RunWriters(Tokens::kRising); }

INSTANTIATE_TEST_SUITE_P(Scopes, ConcurrentWriters,
                         testing::Values(Mode::kRowScope, Mode::kResourceScope, Mode::kFencedUpdate,
                                         Mode::kResourceScopeInserts),
                         ModeName);

}  // namespace
