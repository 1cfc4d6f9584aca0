// What a query's effect is, for the checks of capability.hpp.
#pragma once

#include <type_traits>

#include "leasehold/query.hpp"

namespace leasehold::detail {

template <class Q>
struct effect_of {
  using type = Write<void>;  // a query that declares nothing counts as a write of anything
};
template <class Q>
requires requires {
  typename Q::effect;
}
struct effect_of<Q> {
  using type = typename Q::effect;
};

template <class E>
struct is_read : std::false_type {};
template <class L>
struct is_read<Read<L>> : std::true_type {};

}  // namespace leasehold::detail
