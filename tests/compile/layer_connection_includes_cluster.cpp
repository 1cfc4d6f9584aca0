// A back-edge: the connection layer reaching up to the cluster layer must not build.
#include "cluster_core.hpp"
#include "pipeline.hpp"

int main() {
  return 0;
}
