// What a Request is made with: a number's digits without allocating, and how its bytes are
// freed (request.hpp).
#pragma once

#include <charconv>
#include <cstddef>
#include <string_view>

namespace leasehold::detail {

// A number's decimal digits, for a request argument (a TTL, a key count), without allocating.
class DecimalDigits {
 public:
  explicit DecimalDigits(long long value) noexcept
      : size_(static_cast<std::size_t>(std::to_chars(digits_, digits_ + sizeof digits_, value).ptr -
                                       digits_)) {}
  std::string_view view() const noexcept { return {digits_, size_}; }

 private:
  char digits_[20];  // enough for any long long, sign included
  std::size_t size_;
};

// Frees a request's bytes the way they were allocated: by hiredis' formatter, or by a copy.
struct FreeRequestBytes {
  void (*free_bytes)(char*) noexcept = nullptr;
  void operator()(char* bytes) const noexcept { free_bytes(bytes); }
};

}  // namespace leasehold::detail
