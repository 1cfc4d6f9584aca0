// Must not compile: a constant lock with a namespace holding ':' (it would end the namespace).
#include <leasehold/lock.hpp>

using namespace std::chrono_literals;
constexpr leasehold::Lock<std::uint64_t> broken{"in:voice", 30s};

int main() {}
