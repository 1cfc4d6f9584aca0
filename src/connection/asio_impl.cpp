// Asio is built once, here, with ASIO_SEPARATE_COMPILATION: every other translation unit only
// includes its declarations, which keeps compile times down.
#include <asio/impl/src.hpp>
#include <asio/ssl/impl/src.hpp>
