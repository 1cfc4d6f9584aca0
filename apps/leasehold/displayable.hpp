// Outside text as the command shows it: lease names, holders' hosts and labels, keys and what the
// server says can hold any bytes, terminal escapes among them.
#pragma once

#include <string>
#include <string_view>

namespace leasehold::cli {

// `text` safe to show on a terminal: control characters (C0, DEL, C1) and bytes that are not
// well-formed UTF-8 become '?', and so does every non-ASCII character when `utf8` is false (a
// terminal that is not UTF-8). Text that is already displayable comes back as it is.
std::string displayable(std::string_view text, bool utf8 = true);

}  // namespace leasehold::cli
