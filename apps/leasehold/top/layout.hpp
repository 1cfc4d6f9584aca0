// leasehold top's table: a header line, then the rows in columns that are narrowed, then dropped,
// to fit the width.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "top/rows.hpp"
#include "top/text.hpp"

namespace leasehold::cli::top_parts {

// The column headers, then one line per row.
std::vector<std::string> table_lines(const std::vector<Row>& rows, std::size_t width,
                                     const Style& style);

// "leasehold top  127.0.0.1:6379  prefix leasehold  3 leases  by name  12:34:56"; a long server
// address (a socket's path, a cluster's seeds) is cut first.
std::string header_line(const Globals& globals, Client& redis, const TopOptions& options,
                        std::size_t leases, std::size_t width, const Style& style);

}  // namespace leasehold::cli::top_parts
