// The PostgreSQL fencing recipe against a real PostgreSQL the suite starts itself (initdb in a
// temp dir, a unix socket only) and a real redis-server: holders stalled for real (SIGSTOP, past
// their lease) resume after a newer holder wrote, and PostgreSQL refuses their writes — to a row
// that carries its fence, and through a `fences` table in the writing transaction. The recipe's
// example (libpq) runs against both.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <memory>
#include <regex>
#include <string>

#include "build_paths.hpp"
#include "cli_fixture.hpp"
#include "eventually.hpp"
#include "postgres_server.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;
using cli_testing::until_exists;
using testing::eventually;
using testing::PostgresServer;

class PostgresFenceTest : public cli_testing::CliTest {
 protected:
  static void SetUpTestSuite() {
    CliTest::SetUpTestSuite();
    postgres_ = std::make_unique<PostgresServer>();
    postgres_->query(
        "CREATE TABLE invoices (id int PRIMARY KEY, state text, fence bigint NOT NULL DEFAULT 0);"
        "CREATE TABLE fences (resource text PRIMARY KEY, fence bigint NOT NULL);"
        "CREATE TABLE published (resource text, body text, fence bigint)");
  }
  static void TearDownTestSuite() {
    postgres_.reset();
    CliTest::TearDownTestSuite();
  }

  // A psql call, for a command's shell: SQL with $LEASEHOLD_FENCE expanded by the shell.
  static std::string psql(const std::string& sql) {
    return postgres_->program("psql") + " '" + postgres_->conninfo() +
           "' -v ON_ERROR_STOP=1 -qAt -c \"" + sql + "\"";
  }

  // Runs `holder_sql` under a run of name_ that is stopped (with its command) past its lease,
  // then `newer_sql` under a new run, then resumes the first: what the first's psql printed.
  std::string stalled_then_resumed(const std::string& holder_sql, const std::string& newer_sql) {
    const std::string ready = file("-ready");
    const std::string go = file("-go");
    const std::string result = file("-result");
    // The command ignores SIGTERM (and so does psql): it writes after the loss is noticed, as a
    // holder that does not look would.
    auto stale = cli({"run", "-t", "500ms", "--kill-after", "10s", name_, "--", "sh", "-c",
                      "trap '' TERM; echo $$ > " + ready + ".tmp; mv " + ready + ".tmp " + ready +
                          "; " + until_exists(go) + "; " + psql(holder_sql) + " > " + result +
                          "; echo exit $? >> " + result});
    EXPECT_TRUE(eventually([&] { return !testing::read_file(ready).empty(); }));
    const pid_t command = std::stoi(testing::read_file(ready));
    ::kill(-command, SIGSTOP);
    stale.signal(SIGSTOP);
    EXPECT_TRUE(eventually([&] { return !exists(writer_key()); }, 3s)) << "the lease ran out";
    auto newer = cli({"run", name_, "--", "sh", "-c", psql(newer_sql)});
    EXPECT_EQ(newer.wait(), 0) << newer.err();
    std::ofstream{go};
    ::kill(-command, SIGCONT);
    stale.signal(SIGCONT);
    EXPECT_EQ(stale.wait(), 75) << "the lost lease is noticed";
    return testing::read_file(result);
  }

  static inline std::unique_ptr<PostgresServer> postgres_;
};

TEST_F(PostgresFenceTest, ARowCarryingItsFenceRefusesTheStalledHoldersUpdate) {
  const std::string id = std::to_string(unique_number());
  postgres_->query("INSERT INTO invoices (id, state) VALUES (" + id + ", 'open')");
  const auto update = [&](const std::string& state) {
    return "UPDATE invoices SET state = '" + state +
           "', fence = $LEASEHOLD_FENCE WHERE id = " + id +
           " AND fence <= $LEASEHOLD_FENCE RETURNING fence";
  };
  const std::string stale = stalled_then_resumed(update("by the stalled"), update("by the newer"));
  EXPECT_EQ(stale, "exit 0\n") << "the stalled holder's update matched no row";
  EXPECT_EQ(postgres_->query("SELECT state FROM invoices WHERE id = " + id), "by the newer");
}

TEST_F(PostgresFenceTest, AFencesTableRefusesTheStalledHoldersInsertInItsTransaction) {
  const std::string resource = "report-" + std::to_string(unique_number());
  // One statement, one transaction: the report is inserted only if the fence moved forward.
  const auto publish = [&](const std::string& body) {
    return "WITH newest AS (INSERT INTO fences VALUES ('" + resource +
           "', $LEASEHOLD_FENCE) ON CONFLICT (resource) DO UPDATE SET fence = EXCLUDED.fence "
           "WHERE fences.fence <= EXCLUDED.fence RETURNING fence) INSERT INTO published SELECT '" +
           resource + "', '" + body + "', fence FROM newest RETURNING fence";
  };
  const std::string stale =
      stalled_then_resumed(publish("by the stalled"), publish("by the newer"));
  EXPECT_EQ(stale, "exit 0\n") << "the stalled holder's insert wrote nothing";
  EXPECT_EQ(postgres_->query("SELECT string_agg(body, ',') FROM published WHERE resource = '" +
                             resource + "'"),
            "by the newer");
}

TEST_F(PostgresFenceTest, TheRecipesExampleRuns) {
  ASSERT_NE(std::string(testing::build_paths::postgres_example), "") << "libpq was not found";
  testing::ChildProcess example(
      {"env", "LEASEHOLD_REDIS_URL=" + server_->unix_url(),
       "LEASEHOLD_POSTGRES=" + postgres_->conninfo(), testing::build_paths::postgres_example},
      server_->dir());
  EXPECT_EQ(example.wait(), 0) << example.out() << example.err();
  EXPECT_TRUE(std::regex_search(
      example.out(), std::regex("slow \\(fence [0-9]+\\): invoice REFUSED, report REFUSED")))
      << example.out();
}

}  // namespace
}  // namespace leasehold
