#include <leasehold/leasehold.hpp>

#include <iostream>

int main() {
  // Parses a URL and builds a query: links against the installed library, needs no server.
  const auto url = leasehold::RedisUrl::parse("redis://user:secret@127.0.0.1:7000/2");
  const leasehold::Request request = leasehold::Command{"PING"}.request();
  std::cout << "leasehold " << leasehold::version << " " << url.to_string() << " "
            << request.bytes().size() << "\n";
  return url.db == 2 && request.bytes() == "*1\r\n$4\r\nPING\r\n" ? 0 : 1;
}
