// A back-edge: the connection layer reaching up to a policy header must not build.
#include "leasehold/with_lock.hpp"
#include "pipeline.hpp"

int main() {
  return 0;
}
