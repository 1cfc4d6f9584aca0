// A back-edge: the connection layer reaching up to the cluster layer must not build.
#include "cluster_connection.hpp"
#include "pipeline.hpp"

int main() {
  return 0;
}
