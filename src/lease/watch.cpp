#include "leasehold/watch.hpp"

#include <asio/dispatch.hpp>
#include <asio/post.hpp>
#include <charconv>

#include "lease_scripts.hpp"
#include "leasehold/detail/keys.hpp"
#include "leasehold/detail/timer.hpp"
#include "leasehold/holder.hpp"
#include "leasehold/lease.hpp"
#include "transport.hpp"

namespace leasehold::detail {

// The scripts' contracts are in src/lease/scripts/.

Request observe_request(const WatchTarget& target, std::string_view id,
                        std::chrono::milliseconds ticket_ttl) {
  static const Script script{std::string(lua::observe)};
  const std::string observed = observed_key(target.key);
  const std::string channel = changed_channel(target.key);
  const DecimalDigits ticket(ticket_ttl.count());
  const std::string_view keys[] = {target.key, observed,
                                   target.counter ? std::string_view(*target.counter) : "",
                                   target.value_key ? std::string_view(*target.value_key) : ""};
  const std::size_t key_count = !target.counter ? 2 : target.value_key ? 4 : 3;
  const std::string_view args[] = {id, ticket.view(), channel, target.announced ? "1" : "0"};
  return Request::script(script, std::span(keys, key_count), args).retry_safe();
}

Request observe_keep_request(const WatchTarget& target, std::string_view id,
                             std::chrono::milliseconds ticket_ttl) {
  static const Script script{std::string(lua::observe_keep)};
  const std::string observed = observed_key(target.key);
  const DecimalDigits ticket(ticket_ttl.count());
  const DecimalDigits now = DecimalDigits(
      std::chrono::duration_cast<std::chrono::milliseconds>(server_clock_now().time_since_epoch())
          .count());
  const std::string_view keys[] = {observed};
  const std::string_view args[] = {id, ticket.view(), now.view()};
  return Request::script(script, keys, args).retry_safe();
}

Request observe_leave_request(const WatchTarget& target, std::string_view id) {
  static const Script script{std::string(lua::observe_leave)};
  const std::string observed = observed_key(target.key);
  const std::string_view keys[] = {observed};
  const std::string_view args[] = {id};
  return Request::script(script, keys, args).retry_safe();
}

std::optional<LeaseInfo> lock_lease_seen(const SeenLease& seen) {
  if (seen.lease.empty())
    return std::nullopt;
  StoredLease lease = read_stored_lease(seen.lease);
  return LeaseInfo{LeaseInfo::Kind::exclusive, lease.id_hex.substr(0, 8), std::move(lease.holder),
                   seen.time_left};
}

namespace {

std::optional<std::uint64_t> unsigned_of(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty())
    return std::nullopt;
  return value;
}

std::optional<long long> signed_of(std::string_view text) {
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty())
    return std::nullopt;
  return value;
}

// The next space-separated word of `text`, taken off it.
std::string_view take_word(std::string_view& text) {
  const std::size_t space = text.find(' ');
  const std::string_view word = text.substr(0, space);
  text.remove_prefix(space == std::string_view::npos ? text.size() : space + 1);
  return word;
}

}  // namespace

Result<Look> parse_look(const Reply& reply) {
  if (reply.is_error())
    return error_result<Look>(reply);
  const auto& e = reply.elements;
  const auto text = [](const Reply& r) {
    return r.type == Reply::Type::string || r.type == Reply::Type::status;
  };
  const bool well_formed = reply.type == Reply::Type::array && e.size() == 6 && text(e[0]) &&
                           e[1].type == Reply::Type::integer && (e[2].is_nil() || text(e[2])) &&
                           e[3].type == Reply::Type::integer && e[4].type == Reply::Type::integer &&
                           e[4].integer >= 0 && (e[5].is_nil() || text(e[5]));
  const std::optional<std::uint64_t> version = well_formed ? unsigned_of(e[0].str) : std::nullopt;
  if (!version)
    return Result<Look>(make_error_code(errc::unexpected_reply),
                        "an unexpected reply to an observer's look: " + to_string(reply));
  Look look;
  look.seen.version = *version;
  look.looker = e[1].integer == 1;
  if (!e[2].is_nil()) {
    look.seen.state.lease = e[2].str;
    look.seen.state.time_left = std::chrono::milliseconds(e[3].integer);
    look.seen.state.term = static_cast<std::uint64_t>(e[4].integer);
    if (!e[5].is_nil())
      look.seen.state.proclaimed = e[5].str;
  }
  return look;
}

Result<bool> parse_keep(const Reply& reply) {
  if (reply.is_error())
    return error_result<bool>(reply);
  if (reply.type != Reply::Type::integer || reply.integer < 0 || reply.integer > 1)
    return Result<bool>(make_error_code(errc::unexpected_reply),
                        "an unexpected reply to an observer's renewal: " + to_string(reply));
  return reply.integer == 1;
}

std::optional<Announced> parse_announcement(std::string_view payload) {
  // "<version>", or "<version> <PTTL> <term> <lease value>[\n<proclaimed value>]".
  Announced announced;
  const std::size_t newline = payload.find('\n');
  std::string_view line = payload.substr(0, newline);
  const std::optional<std::uint64_t> version = unsigned_of(take_word(line));
  if (!version)
    return std::nullopt;
  announced.version = *version;
  if (payload.find_first_of(" \n") == std::string_view::npos)
    return announced;  // nobody holds the name
  const std::optional<long long> ttl = signed_of(take_word(line));
  const std::optional<std::uint64_t> term = unsigned_of(take_word(line));
  if (!ttl || !term || line.empty() || line.find(' ') != std::string_view::npos)
    return std::nullopt;
  announced.state.lease = std::string(line);
  announced.state.time_left = std::chrono::milliseconds(*ttl);
  announced.state.term = *term;
  if (newline != std::string_view::npos)
    announced.state.proclaimed = std::string(payload.substr(newline + 1));
  return announced;
}

void validate(const WatchOptions& options) {
  const auto invalid = [](const std::string& what) {
    return Error(make_error_code(errc::invalid_argument), what);
  };
  constexpr auto zero = std::chrono::milliseconds::zero();
  if (options.ticket_ttl <= zero)
    throw invalid("the watch's ticket TTL must be positive");
  for (const auto& [interval, name] : {std::pair{options.recheck, "recheck"},
                                       std::pair{options.recheck_unwatched, "recheck_unwatched"}})
    if (interval <= zero || interval >= options.ticket_ttl)
      throw invalid(std::string("the watch's ") + name +
                    " interval must be positive and shorter than its ticket TTL (" +
                    std::to_string(options.ticket_ttl.count()) +
                    " ms): each look renews the name's observation");
}

void throw_watch_error(std::error_code error, const std::string& detail) {
  throw_if(error, detail);
  throw Error(error, detail);  // (throw_if throws for every error: a watch ends with one)
}

std::error_code aborted() noexcept {
  return asio::error::operation_aborted;
}

}  // namespace leasehold::detail
