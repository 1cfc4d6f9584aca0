// A private PostgreSQL server for a test suite: a cluster made by initdb in a fresh temp
// directory, listening only on a unix socket there (no TCP port), never the system's cluster.
// PostgreSQL refuses to run as root: when the tests do, its programs run as the `postgres` user
// (setpriv), which owns the directory. Stopped, and its directory removed, by the destructor.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace leasehold::testing {

class PostgresServer {
 public:
  PostgresServer();
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // libpq's connection string: the socket's directory and port, the database "postgres", the
  // superuser "leasehold" (trust authentication, on the private socket only).
  std::string conninfo() const;
  const std::string& dir() const { return dir_; }
  // The path of one of the server's programs ("psql", "pg_dump", ...).
  std::string program(const std::string& name) const { return bin_dir_ + "/" + name; }

  // Runs `sql` (one or more statements) on a fresh connection; the first column of the last
  // statement's first row, or "" when it returned none. Throws with the server's message.
  std::string query(const std::string& sql) const;

 private:
  // Runs a server program as the directory's owner: to its end (`wait`), or as the server.
  void run_as_owner(const std::vector<std::string>& args, bool wait);

  std::string dir_;
  std::string bin_dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace leasehold::testing
