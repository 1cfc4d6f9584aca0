// Fences checked by PostgreSQL. A holder stalls (a GC pause, SIGSTOP) until its lease runs out;
// another replica takes over and writes. When the first resumes, PostgreSQL refuses its writes,
// because each carries the fencing number of its grant and the database keeps the newest:
//
//   - a row that carries its fence: UPDATE ... WHERE id = $1 AND fence <= $2;
//   - a resource without a row of its own: a `fences` table, updated only by a newer fence
//     (INSERT ... ON CONFLICT ... DO UPDATE ... WHERE fences.fence <= EXCLUDED.fence), in the
//     same transaction as the write it guards.
//
// See docs/fencing.md.
//
//   LEASEHOLD_REDIS_URL=redis://127.0.0.1:6380 LEASEHOLD_POSTGRES="dbname=app" ./postgres_fencing
#include <libpq-fe.h>

#include <cstdlib>
#include <iostream>
#include <leasehold/leasehold.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

using namespace std::chrono_literals;

const auto kInvoices = leasehold::Lock<std::string>{"invoice", 200ms}.with_fencing();

using Connection = std::unique_ptr<PGconn, decltype(&PQfinish)>;
using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

// Runs one statement with text parameters; throws on an error. The number of rows it affected.
int execute(PGconn* db, const char* sql, std::initializer_list<std::string> params = {}) {
  std::vector<const char*> values;
  for (const auto& param : params)
    values.push_back(param.c_str());
  Result result(PQexecParams(db, sql, static_cast<int>(values.size()), nullptr, values.data(),
                             nullptr, nullptr, 0),
                PQclear);
  const auto status = PQresultStatus(result.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    throw std::runtime_error(std::string(sql) + ": " + PQresultErrorMessage(result.get()));
  return std::atoi(PQcmdTuples(result.get()));
}

// The row carries its fence: the update matches it only if no newer holder has written.
bool finalize_invoice(PGconn* db, const std::string& state, std::uint64_t fence) {
  return execute(db, "UPDATE invoices SET state = $2, fence = $3 WHERE id = $1 AND fence <= $3",
                 {"42", state, std::to_string(fence)}) == 1;
}

// A resource without a row of its own (the month's report): its fence in `fences`, updated in
// the transaction that writes, and only by a fence not older than the one kept. The row lock it
// takes orders the writers; a stale one finds the newer fence and writes nothing.
bool publish_report(PGconn* db, const std::string& body, std::uint64_t fence) {
  execute(db, "BEGIN");
  const bool newest = execute(db,
                              "INSERT INTO fences (resource, fence) VALUES ('report:2026-11', $1) "
                              "ON CONFLICT (resource) DO UPDATE SET fence = EXCLUDED.fence "
                              "WHERE fences.fence <= EXCLUDED.fence",
                              {std::to_string(fence)}) == 1;
  if (!newest) {
    execute(db, "ROLLBACK");
    return false;
  }
  execute(db, "INSERT INTO reports (month, body) VALUES ('2026-11', $1)", {body});
  execute(db, "COMMIT");
  return true;
}

bool write_as(PGconn* db, const leasehold::LockToken<leasehold::Lock<std::string>>& token,
              const std::string& who) {
  const std::uint64_t fence = *token.fence();
  const bool invoice = finalize_invoice(db, "final, by " + who, fence);
  const bool report = publish_report(db, "totals, by " + who, fence);
  std::cout << who << " (fence " << fence << "): invoice " << (invoice ? "written" : "REFUSED")
            << ", report " << (report ? "written" : "REFUSED") << "\n";
  return invoice && report;
}

int main() {
  const char* redis_url = std::getenv("LEASEHOLD_REDIS_URL");
  const char* postgres = std::getenv("LEASEHOLD_POSTGRES");
  try {
    Connection db(PQconnectdb(postgres ? postgres : "dbname=postgres"), PQfinish);
    if (PQstatus(db.get()) != CONNECTION_OK)
      throw std::runtime_error(std::string("PostgreSQL: ") + PQerrorMessage(db.get()));
    execute(db.get(), "SET client_min_messages = warning");  // no notice for existing tables
    execute(db.get(),
            "CREATE TABLE IF NOT EXISTS invoices (id int PRIMARY KEY, state text, "
            "fence bigint NOT NULL DEFAULT 0)");
    execute(db.get(),
            "CREATE TABLE IF NOT EXISTS fences (resource text PRIMARY KEY, fence bigint NOT NULL)");
    execute(db.get(), "CREATE TABLE IF NOT EXISTS reports (month text, body text)");
    execute(db.get(),
            "INSERT INTO invoices (id, state) VALUES (42, 'open') ON CONFLICT DO NOTHING");

    leasehold::Client slow(redis_url ? redis_url : "redis://127.0.0.1:6379");
    leasehold::Client fast(redis_url ? redis_url : "redis://127.0.0.1:6379");
    auto stale = slow.process(kInvoices.try_lock("42"));
    std::cout << "slow holder: took invoice 42, then stalls...\n";
    while (!stale->expired())
      std::this_thread::sleep_for(10ms);  // the stall

    auto current = leasehold::lock_for(fast, kInvoices, std::string("42"), 5s);
    const bool fast_wrote = current && write_as(db.get(), *current, "fast");
    fast.process(current->release());

    std::cout << "slow holder resumes, unaware:\n";
    const bool slow_wrote = write_as(db.get(), *stale, "slow");
    return fast_wrote && !slow_wrote ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
