// The connection layer's own view builds: its internal headers, and the public headers of its
// layer and the protocol below it. (The two back-edge cases next to it fail for the one include
// they add.)
#include "leasehold/detail/operation.hpp"
#include "leasehold/options.hpp"
#include "pipeline.hpp"
#include "transport.hpp"

int main() {
  return 0;
}
