// Text that fits a terminal's columns, one column per character: displayable text (names made
// safe to show, displayable.hpp) cut with an ellipsis.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "displayable.hpp"

namespace leasehold::cli::top_parts {

// How the terminal shows text: UTF-8, or ASCII only.
struct Style {
  bool utf8 = true;
  std::string_view ellipsis() const { return utf8 ? "\xe2\x80\xa6" : "~"; }
};

// The columns `shown` (displayable text) takes: one per character.
std::size_t columns_of(std::string_view shown);

// `shown` cut to `width` columns, its last one `ellipsis` when cut.
std::string fit(const std::string& shown, std::size_t width, std::string_view ellipsis);

}  // namespace leasehold::cli::top_parts
