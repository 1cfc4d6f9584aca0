// The split-phase commands, for scripts and units that cannot wrap a command in `leasehold run`:
// acquire (take a lease, print its token, leave it to its TTL), extend and release (by a token),
// and hold (keep a lease until a signal or the end of its input).
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>

#include "cli.hpp"
#include "displayable.hpp"
#include "inspect.hpp"
#include "supervise.hpp"

namespace leasehold::cli {
namespace {

using std::chrono::milliseconds;

inline constexpr int kExitIoErr = 74;  // EX_IOERR: the token could not be written

// 'text', safe to paste into a POSIX shell.
std::string shell_quoted(std::string_view text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'')
      quoted += "'\\''";
    else
      quoted += c;
  }
  return quoted + "'";
}

// printf's format for exactly `text`: every byte but letters, digits, '_', '.' and '/' as an
// octal escape ("\033"), so that it holds no control character, quote, '%' or leading '-'.
std::string printf_format(std::string_view text) {
  std::string format;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') ||
        (byte >= '0' && byte <= '9') || c == '_' || c == '.' || c == '/') {
      format += c;
    } else {
      format += '\\';
      for (const int shift : {6, 3, 0})
        format += static_cast<char>('0' + ((byte >> shift) & 7));
    }
  }
  return format;
}

// A line for a POSIX shell's eval that exports `variable` with exactly `value`. A value that is
// not displayable as it is (control characters, bytes that are not UTF-8) is made by printf from
// octal escapes, so that it never reaches a terminal that shows the line; the '.' it ends with
// keeps the trailing newlines that $(...) would strip.
std::string export_line(const std::string& variable, const std::string& value) {
  if (displayable(value) == value)
    return "export " + variable + "=" + shell_quoted(value) + "\n";
  return variable + "=$(printf '" + printf_format(value) + ".'); export " + variable + "=\"${" +
         variable + "%.}\"\n";
}

// Prints the token as asked; false if stdout could not take it.
bool print_token(const AcquireOptions& options, const HeldLease& held) {
  const std::string name = lease_name(options);
  const std::optional<std::uint64_t> fence = held.fence();
  switch (options.format) {
    case TokenFormat::plain:
      std::cout << held.token() << "\n";
      break;
    case TokenFormat::json: {
      const Json out = {{"name", options.raw_key ? Json() : Json(name)},
                        {"raw_key", options.raw_key ? Json(name) : Json()},
                        {"kind", options.raw_key  ? "raw"
                                 : options.shared ? "shared"
                                                  : "exclusive"},
                        {"key", held.key()},
                        {"token", held.token()},
                        {"ttl_ms", options.ttl.count()},
                        {"fence", fence ? Json(*fence) : Json()}};
      std::cout << json_text(out) << "\n";
      break;
    }
    case TokenFormat::env:
      std::cout << export_line("LEASEHOLD_NAME", name)
                << export_line("LEASEHOLD_TOKEN", held.token());
      if (fence)
        std::cout << "export LEASEHOLD_FENCE=" << *fence << "\n";
      break;
  }
  std::cout.flush();
  return static_cast<bool>(std::cout);
}

// Takes the lease of `options` (exiting on a Redis failure): the lease, or the exit code.
Taken take(const Globals& globals, const AcquireOptions& options, std::string_view command,
           Client& redis) {
  Taken taken = take_lease(globals, options, redis);
  if (taken.lease)
    chat(globals, std::string(command) + ": took '" + lease_name(options) + "' (" +
                      taken.lease->kind(options) + ", ttl " + format_duration(options.ttl) + ")");
  return taken;
}

// Tells systemd (a Type=notify unit: $NOTIFY_SOCKET) that the lease is held, so that the units
// ordered after this one start only then. Without $NOTIFY_SOCKET: nothing.
void notify_ready() {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || path[0] == '\0')
    return;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::size_t length = std::strlen(path);
  if (length >= sizeof address.sun_path)
    return;
  std::memcpy(address.sun_path, path, length);
  if (path[0] == '@')
    address.sun_path[0] = '\0';  // an abstract socket
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return;
  const char ready[] = "READY=1";
  ::sendto(fd, ready, sizeof ready - 1, MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&address),
           static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length));
  ::close(fd);
}

// Whether stdin's end means something: a pipe, a socket or a terminal ends when its writer goes
// (or on Ctrl-D). /dev/null or a file would end at once.
bool input_can_end() {
  struct stat status {};
  if (::fstat(STDIN_FILENO, &status) != 0)
    return false;
  return S_ISFIFO(status.st_mode) || S_ISSOCK(status.st_mode) || ::isatty(STDIN_FILENO);
}

// Reads what is waiting on stdin: true once it has ended.
bool input_ended() {
  pollfd input{STDIN_FILENO, POLLIN, 0};
  if (::poll(&input, 1, 0) <= 0)
    return false;
  char discarded[512];
  const ssize_t got = ::read(STDIN_FILENO, discarded, sizeof discarded);
  return got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN);
}

// The 32 hex digits of a token (lower case), or UsageError.
std::string require_token(const std::string& token) {
  if (token.empty())
    throw UsageError{
        "no token: give --token T or set LEASEHOLD_TOKEN (what `leasehold acquire` printed)"};
  try {
    return LeaseId::from_hex(token).hex();
  } catch (const Error&) {
    throw UsageError{"--token: a token is the 32 hex digits `leasehold acquire` printed"};
  }
}

// Extends (extend: true) or releases the lease of `options.token`, in one script call: a raw
// key holds the bare id, which is the lease's value; a name's writer or reader is found by its id
// by the server. A lease that ran out meanwhile is not touched. Nothing found: false.
bool act_on_token(const Globals& globals, const TokenOptions& options, const std::string& token,
                  Client& redis, bool extend) {
  if (options.raw_key) {
    const auto adopted = RawLock(options.ttl).adopt(*options.raw_key, token);
    return extend ? redis.process(adopted.extend()) : redis.process(adopted.release());
  }
  const RwLock<std::string> lock = run_lock(globals, options.ttl);
  const LeaseId id = LeaseId::from_hex(token);
  return redis.process(extend ? lock.extend_by_id(options.name, id)
                              : lock.release_by_id(options.name, id));
}

int by_token(const Globals& globals, const TokenOptions& options, bool extend) {
  const char* command = extend ? "extend" : "release";
  if (options.raw_key && !options.name.empty())
    throw UsageError{std::string(command) + ": give NAME or --raw-key KEY, not both"};
  if (!options.raw_key && options.name.empty())
    throw UsageError{std::string(command) + ": NAME must not be empty"};
  if (options.ttl < milliseconds(10))
    throw UsageError{"--ttl: must be at least 10ms"};
  const std::string token = require_token(options.token);
  Client redis = connect_or_exit(globals);
  const std::string name = options.raw_key ? *options.raw_key : options.name;
  bool done = false;
  try {
    done = act_on_token(globals, options, token, redis, extend);
  } catch (const Error& e) {
    if (options.raw_key)
      exit_raw_key_failure(redis, *options.raw_key, e);
    exit_failure(globals, redis, options.name, e);
  }
  if (!done) {
    say(globals, "'" + name + "' is not held by this token: it ran out or was taken over");
    return options.conflict_exit_code;
  }
  chat(globals, std::string(extend ? "extended '" : "released '") + name + "'" +
                    (extend ? " for " + format_duration(options.ttl) : ""));
  return 0;
}

}  // namespace

std::string invoker_label(const std::vector<std::string>& own_command) {
  const pid_t parent = ::getppid();
  std::vector<std::string> words;
  if (parent > 1) {
    std::ifstream cmdline("/proc/" + std::to_string(parent) + "/cmdline", std::ios::binary);
    const std::string all((std::istreambuf_iterator<char>(cmdline)),
                          std::istreambuf_iterator<char>());
    std::string word;
    for (char c : all) {
      if (c != '\0') {
        word += c;
        continue;
      }
      words.push_back(word);
      word.clear();
    }
    if (!word.empty())
      words.push_back(word);
  }
  return command_label(words.empty() ? own_command : words);
}

int acquire(const Globals& globals, const AcquireOptions& options) {
  validate(options, "acquire");
  if (!options.raw_key)
    set_holder_label(invoker_label({"leasehold", "acquire", options.name}));
  block_forwarded_signals();  // a wait takes them in a thread of its own
  Client redis = connect_or_exit(globals);
  Taken taken = take(globals, options, "acquire", redis);
  if (!taken.lease)
    return taken.exit_code;
  if (!print_token(options, *taken.lease)) {
    // Nobody got the token: the lease would only keep others out until its TTL.
    std::move(*taken.lease).guard(redis, milliseconds(0)).release();
    warn("acquire: could not write the token to stdout; the lease is given back");
    return kExitIoErr;
  }
  return 0;  // the token is dropped, not released: the lease lives for its TTL
}

int hold(const Globals& globals, const AcquireOptions& options) {
  validate(options, "hold");
  if (options.max_time < milliseconds::zero())
    throw UsageError{"--max-time: must not be negative"};
  if (!options.raw_key)
    set_holder_label(invoker_label({"leasehold", "hold", options.name}));
  block_forwarded_signals();
  Client redis = connect_or_exit(globals);
  Taken taken = take(globals, options, "hold", redis);
  if (!taken.lease)
    return taken.exit_code;
  const std::string name = lease_name(options);
  const bool printed = print_token(options, *taken.lease);
  // --max-time is the hold's budget, counted by the same stops as a command's.
  LeaseGuard lease = std::move(*taken.lease).guard(redis, milliseconds(0));
  if (!printed) {
    lease.release();
    warn("hold: could not write the token to stdout; the lease is given back");
    return kExitIoErr;
  }
  notify_ready();
  const KeepAlive& keep_alive = lease.keep_alive();
  const bool watch_input = input_can_end();
  chat(globals, "holding '" + name + "' until SIGTERM or SIGINT" +
                    (watch_input ? std::string(" or the end of stdin") : std::string()));
  const Supervision supervision{.max_time = options.max_time,
                                .lost = [&] { return keep_alive.lost(); }};
  const StopCause stopped =
      hold_until_stopped(supervision, watch_input ? input_ended : std::function<bool()>());
  lease.release();
  if (stopped == StopCause::max_time) {
    warn("'" + name + "': held for --max-time " + format_duration(options.max_time) +
         "; the lease is given back");
    return kExitTimedOut;
  }
  if (stopped == StopCause::lost) {
    warn("lost the lease on '" + name + "' (" + loss_reason(keep_alive.cause()) + ")");
    return kExitLeaseLost;
  }
  return 0;
}

int extend_token(const Globals& globals, const TokenOptions& options) {
  return by_token(globals, options, true);
}

int release_token(const Globals& globals, const TokenOptions& options) {
  return by_token(globals, options, false);
}

}  // namespace leasehold::cli
