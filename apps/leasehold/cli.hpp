// The leasehold command's pieces, shared by its subcommands (and unit-tested where pure).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "leasehold/leasehold.hpp"
#include "watchdog.hpp"

namespace leasehold::cli {

// Exit codes (sysexits.h where they exist).
inline constexpr int kExitUsage = 64;        // EX_USAGE: a bad flag, duration or name
inline constexpr int kExitDataErr = 65;      // EX_DATAERR: a key of the name holds another type
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: Redis unreachable or refusing
inline constexpr int kExitLeaseLost = 75;    // EX_TEMPFAIL: the lease was lost while running
inline constexpr int kExitTimedOut = 124;    // as timeout(1): the command ran past --max-time
inline constexpr int kExitCannotExecute = 126;
inline constexpr int kExitNotFound = 127;

// Thrown for usage errors: exits 64 with the message.
struct UsageError {
  std::string message;
};

// "250ms", "30s", "5m", "1h", "1.5s" (a decimal number and a unit: ms, s, m, h). Anything else:
// nothing.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);
// The same, or UsageError naming the flag.
std::chrono::milliseconds require_duration(std::string_view flag, std::string_view text);
// "1.2 s", "250 ms", "3 m 5 s": for messages.
std::string format_duration(std::chrono::milliseconds d);

struct Globals {
  std::string redis_url;
  TlsOptions tls;  // for rediss:// URLs
  // --replica-acks: WAIT for this many replicas after each acquire and extend (over the URL's).
  std::optional<int> replica_acks;
  std::string prefix = "leasehold";
  bool verbose = false;
  bool quiet = false;
};

// Messages to stderr, as "leasehold: ...", one line each shown through displayable(): they quote
// names, holders, keys and the server, any of which may hold terminal escapes. say() is silent
// under --quiet, chat() speaks only under --verbose; warn() always speaks.
void say(const Globals& globals, const std::string& message);
void chat(const Globals& globals, const std::string& message);
void warn(const std::string& message);
// The library's warnings and errors (a server's eviction policy, a sentinel's refusal) on stderr
// as its default handler writes them, but shown through displayable(): they quote the servers.
void show_library_log();

// Connects (failing fast), telling `observer` if given; on failure prints the one-line reason and
// exits 69.
Client connect_or_exit(const Globals& globals, std::shared_ptr<Observer> observer = nullptr);

// --metrics-file PATH: the metrics of this run in the Prometheus text format, written to PATH
// atomically (a temporary file in its directory, renamed over it) by write() and at the end.
class MetricsFile {
 public:
  explicit MetricsFile(std::optional<std::string> path);
  ~MetricsFile() { write(); }
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;

  // What the client tells; nothing without a path.
  const std::shared_ptr<Metrics>& metrics() const noexcept { return metrics_; }
  // Writes the file now; a failure is warned about, once, and the command goes on.
  void write() const noexcept;

 private:
  std::optional<std::string> path_;
  std::shared_ptr<Metrics> metrics_;
  mutable bool warned_ = false;
};

// Why a kept lease was lost, from its keep-alive's cause: "could not extend it: …" or "it expired
// or was taken over".
std::string loss_reason(std::error_code cause);

// If `e` is a Redis failure (unreachable, refusing, out of memory, no permission), prints the
// one-line reason and exits 69.
[[noreturn]] void exit_unavailable(const std::exception& e);

// The keys of NAME under the prefix — its run lease's, its permits' and its cron job's — that
// hold a value of another type (the library's foreign_keys(), one call per hash slot).
std::vector<ForeignKey> keys_of_another_type(const Globals& globals, Client& redis,
                                             const std::string& name);
// "KEY holds a hash (leasehold keeps a string there)"
std::string foreign_key_text(const ForeignKey& foreign);
// What to tell of `e`, a key of the wrong type among NAME's: which key, what it holds, the way out.
std::string wrong_type_message(const Globals& globals, Client& redis, const std::string& name,
                               const std::exception& e);
// exit_unavailable(e), unless `e` is a key of the wrong type: then it says wrong_type_message()
// and exits 65.
[[noreturn]] void exit_failure(const Globals& globals, Client& redis, const std::string& name,
                               const std::exception& e);

// The holder label of a command's leases: its words joined by spaces, shortened to 64 bytes
// ("…" marks a cut).
std::string command_label(const std::vector<std::string>& command);

// The signals leasehold forwards to its child, blocked in every thread (call before creating any
// thread) and waited for with sigtimedwait.
sigset_t forwarded_signals();
void block_forwarded_signals();

// A child process in its own process group, with the signal mask and dispositions reset, and a
// watchdog that stops its group (SIGTERM, then SIGKILL after `kill_after`) should leasehold end
// first (supervise() dismisses it).
struct Child {
  pid_t pid = -1;
  int spawn_error = 0;  // errno of a failed exec: ENOENT -> 127, others -> 126
  Watchdog watchdog;
};
Child spawn_child(const std::vector<std::string>& command,
                  const std::vector<std::pair<std::string, std::string>>& extra_env,
                  std::chrono::milliseconds kill_after);
// The exit code leasehold mirrors for a wait status: the child's, or 128 + its signal.
int exit_code_of(int wait_status);
// For a failed spawn: prints why and returns 127 or 126.
int report_spawn_failure(const std::string& program, int error);

// What a command asks to take: NAME's exclusive or shared lease, one of its --limit permits, or
// the lock of another client's key (--raw-key).
struct TakeOptions {
  std::string name;
  std::vector<std::string> more_names;  // run's NAMEs after the first: one lease on them all
  std::optional<std::string> raw_key;   // instead of NAME: this key, as other clients lock it
  bool shared = false;
  std::optional<std::uint32_t> limit;  // a counting semaphore of this many permits
  bool nonblock = false;
  std::optional<std::chrono::milliseconds> wait;  // nothing: as long as it takes
  int conflict_exit_code = 1;
  std::chrono::milliseconds ttl{30'000};
};
// UsageError for a request that cannot be made (`command` names the subcommand).
void validate(const TakeOptions& options, std::string_view command);
// NAME, or the raw key: for messages.
std::string lease_name(const TakeOptions& options);

// A lease a command took, by the public tokens of its kind.
struct HeldLease {
  using Lease = std::variant<LockToken<RwLock<std::string>>, ReadToken<RwLock<std::string>>,
                             PermitToken<Semaphore<std::string>>, LockToken<RawLock>,
                             LockToken<LockSet<RwLock<std::string>>>>;
  template <class Token>
  explicit HeldLease(Token token) : lease(std::move(token)) {}

  std::string token() const;  // its id's 32 hex digits: what LEASEHOLD_TOKEN holds
  std::string key() const;
  std::optional<std::uint64_t> fence() const;
  // Several names' lease: each name and its fence, in the order they were given.
  std::vector<std::pair<std::string, std::uint64_t>> fences;
  std::string kind(const TakeOptions& options) const;  // "exclusive", "shared", ...
  // Keeps it alive from now on (released with the guard), with a hold budget (zero: none).
  LeaseGuard guard(Client& redis, std::chrono::milliseconds max_hold) &&;

  Lease lease;
};
// The lease taken, or the exit code of a command that gives up waiting for it (the conflict
// code, or 128 + the signal that ended the wait). Exits on a Redis failure.
struct Taken {
  std::optional<HeldLease> lease;
  int exit_code = 0;
};
// At once, then (unless -n) in turn with the other waiters (a raw key: polling) until it is
// taken or --wait runs out.
Taken take_lease(const Globals& globals, const TakeOptions& options, Client& redis);

struct RunOptions : TakeOptions {
  std::vector<std::string> command;
  std::chrono::milliseconds kill_after{5'000};
  std::chrono::milliseconds max_time{0};  // the command's budget from its start; zero: none
  std::optional<std::string> metrics_file;
};
int run(const Globals& globals, const RunOptions& options);

struct CronOptions {
  std::string name;
  std::vector<std::string> command;
  std::chrono::milliseconds every{0};
  std::optional<std::chrono::milliseconds> lease;
  std::string mode = "at-least";
  bool aligned = false;
  std::optional<long long> ticks;
  std::optional<std::string> metrics_file;
  std::chrono::milliseconds max_time{0};  // each run's budget from its start; zero: none
  std::chrono::milliseconds kill_after{5'000};
};
// The default lease for an interval: 10% less, and at least 1 s less (when that stays positive).
std::optional<std::chrono::milliseconds> default_cron_lease(std::chrono::milliseconds every);
int cron(const Globals& globals, const CronOptions& options);

// The split-phase commands (split.cpp): acquire prints a token and leaves the lease to its TTL;
// extend and release act on the lease of a token; hold keeps one until a signal or the end of
// its input.
enum class TokenFormat { plain, json, env };
struct AcquireOptions : TakeOptions {
  TokenFormat format = TokenFormat::plain;
  std::chrono::milliseconds max_time{0};  // hold's budget from the take; zero: none
};
int acquire(const Globals& globals, const AcquireOptions& options);
int hold(const Globals& globals, const AcquireOptions& options);
struct TokenOptions {
  std::string name;
  std::optional<std::string> raw_key;
  std::string token;  // --token, or $LEASEHOLD_TOKEN
  std::chrono::milliseconds ttl{30'000};
  int conflict_exit_code = 1;
};
int extend_token(const Globals& globals, const TokenOptions& options);
int release_token(const Globals& globals, const TokenOptions& options);
// The label of a lease a script takes: the command line of the process that ran leasehold (its
// parent), else leasehold's own.
std::string invoker_label(const std::vector<std::string>& own_command);

// A raw key that holds another type than a lock's string: says so and exits 65; any other
// failure: exit_unavailable().
[[noreturn]] void exit_raw_key_failure(Client& redis, const std::string& key,
                                       const std::exception& e);

int status(const Globals& globals, const std::vector<std::string>& names, bool json);
int raw_key_status(const Globals& globals, const std::vector<std::string>& keys, bool json);
int list(const Globals& globals, const std::string& pattern, bool json);
int release_force(const Globals& globals, const std::string& name);
int release_raw_key_force(const Globals& globals, const std::string& key);

struct TopOptions {
  std::string pattern;  // only names matching this glob; empty: all
  std::chrono::milliseconds interval{1000};
  std::string sort = "name";  // name, left or held
  bool once = false;          // one plain-text table, no curses
  bool json = false;          // one JSON array (implies once)
};
// Every lease under the prefix, one row each with its holder, time left, readers, waiters and
// fencing number: a live view in the terminal (curses), or once as text or JSON.
int top(const Globals& globals, const TopOptions& options);

// Whether the Redis server (or cluster) of --redis is fit for leases: one finding per check (ok,
// warning or problem) with what to change, as text or JSON. 0 when usable, 1 on a problem, 69
// when unreachable.
int doctor(const Globals& globals, bool json);

// leasehold elect (elect.cpp): runs COMMAND only while this process leads the election NAME,
// and with --rejoin stands again after each term.
struct ElectOptions {
  std::string name;
  std::vector<std::string> command;
  std::chrono::milliseconds ttl{30'000};
  std::optional<std::string> value;        // proclaimed in each term
  bool rejoin = false;                     // stand again after a term ends
  std::optional<std::string> status_file;  // exists exactly while leading
  std::chrono::milliseconds kill_after{5'000};
};
int elect(const Globals& globals, const ElectOptions& options);

// leasehold leader (leader.cpp): who leads the election NAME, as text or JSON; kExitNoLeader
// when nobody does.
inline constexpr int kExitNoLeader = 3;
struct LeaderOptions {
  std::string name;
  bool json = false;
  bool watch = false;  // a line now and one per change, until SIGINT or SIGTERM
};
int leader(const Globals& globals, const LeaderOptions& options);

// leasehold fence check (fence.cpp): records FENCE for RESOURCE if it is not older than the
// newest recorded; kExitFenceRefused when it is.
inline constexpr int kExitFenceRefused = 1;
struct FenceCheckOptions {
  std::string resource;
  std::string fence;  // checked by the action: a non-negative integer
  bool json = false;
};
int fence_check(const Globals& globals, const FenceCheckOptions& options);

// The locks the commands use, so that run, cron, status, list and release agree on keys.
RwLock<std::string> run_lock(const Globals& globals, std::chrono::milliseconds ttl);
// The permits of `leasehold run --limit N` (namespace "run", fenced).
Semaphore<std::string> run_semaphore(const Globals& globals, std::chrono::milliseconds ttl,
                                     std::uint32_t permits);
Lock<std::string> cron_lock(const Globals& globals, std::chrono::milliseconds ttl);
// The elections of `elect` and `leader` (namespace "elect").
Election<std::string> elect_election(const Globals& globals, std::chrono::milliseconds ttl);

}  // namespace leasehold::cli
