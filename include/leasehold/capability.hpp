// Capabilities: a Client narrowed to what a piece of code may do, checked at compile time.
//
// Every query declares its effect (`using effect = Write<Lock<N>>;`). A Handle<Capability> runs
// a query only if the capability allows that effect; otherwise the call does not compile.
//
//   auto reader = leasehold::narrow<leasehold::ReadOnly>(redis);
//   reader.process(invoices.try_lock(7));   // compile error: try_lock writes Lock<std::uint64_t>
//
//   using InvoiceLocks = leasehold::Allow<leasehold::Write<leasehold::Lock<std::uint64_t>>>;
//   auto invoicing = leasehold::narrow<InvoiceLocks>(redis);
//   invoicing.process(invoices.try_lock(7));  // compiles; a Lock<std::string> query would not
#pragma once

#include <span>
#include <type_traits>
#include <vector>

#include "leasehold/client.hpp"
#include "leasehold/detail/capability.hpp"
#include "leasehold/query.hpp"

namespace leasehold {

template <class Q>
using effect_of_t = typename detail::effect_of<Q>::type;

// Allows only reads.
struct ReadOnly {
  template <class Effect>
  static constexpr bool allows = detail::is_read<Effect>::value;
};

// Allows everything (what a plain Client does).
struct ReadWrite {
  template <class Effect>
  static constexpr bool allows = true;
};

// Allows exactly the listed effects.
template <class... Effects>
struct Allow {
  template <class Effect>
  static constexpr bool allows = (std::is_same_v<Effect, Effects> || ...);
};

template <class Capability, class Q>
concept AllowedBy = Query<Q> && Capability::template allows<effect_of_t<Q>>;

// A Client narrowed to a capability. Cheap to copy; the Client must outlive it.
template <class Capability>
class Handle {
 public:
  explicit Handle(Client& client) noexcept : client_(&client) {}

  template <class Q>
  requires AllowedBy<Capability, Q>
  typename Q::result_type process(const Q& query) { return client_->process(query); }

  template <class Q>
  requires AllowedBy<Capability, Q>
  typename Q::result_type process(const Q& query, std::error_code& ec) {
    return client_->process(query, ec);
  }

  template <class Q>
  requires AllowedBy<Capability, Q> std::vector<Result<typename Q::result_type>> process(
      std::span<const Q> batch) {
    return client_->process(batch);
  }

  template <class Q, class Token>
  requires AllowedBy<Capability, Q>
  auto async_process(Q query, Token&& token) {
    return client_->async_process(std::move(query), std::forward<Token>(token));
  }

  // A failed call leaves its detail in `diagnostics` (see Client::async_process).
  template <class Q, class Token>
  requires AllowedBy<Capability, Q>
  auto async_process(Q query, Diagnostics& diagnostics, Token&& token) {
    return client_->async_process(std::move(query), diagnostics, std::forward<Token>(token));
  }

 private:
  Client* client_;
};

template <class Capability>
Handle<Capability> narrow(Client& client) noexcept {
  return Handle<Capability>(client);
}

}  // namespace leasehold
