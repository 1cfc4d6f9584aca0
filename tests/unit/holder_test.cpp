// Holder identity: the suffix a lease's value carries, read back from what Redis stores, with
// any byte in the label and the host.
#include "leasehold/holder.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>

#include "leasehold/lease.hpp"

namespace leasehold {
namespace {

using namespace std::chrono_literals;

std::string this_host() {
  char name[HOST_NAME_MAX + 1] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// Sets the process's label for one test, and puts the previous one back.
struct LabelScope {
  explicit LabelScope(std::string label) : previous(detail::holder_label()) {
    set_holder_label(std::move(label));
  }
  ~LabelScope() { set_holder_label(previous); }
  std::string previous;
};

TEST(HolderIdentity, ASuffixReadsBackAsThisProcess) {
  const LabelScope label("billing-worker");
  const std::string id = LeaseId::generate().hex();
  const std::string value = id + detail::holder_suffix();
  const StoredLease stored = read_stored_lease(value);
  EXPECT_EQ(stored.id_hex, id);
  ASSERT_TRUE(stored.holder) << value;
  EXPECT_EQ(stored.holder->host, this_host());
  EXPECT_EQ(stored.holder->pid, ::getpid());
  EXPECT_EQ(stored.holder->label, "billing-worker");
  const auto age = std::chrono::system_clock::now() - stored.holder->taken_at;
  EXPECT_GE(age, 0ms);
  EXPECT_LT(age, 5s);
}

TEST(HolderIdentity, ALabelOfAnyBytesIsEscapedAndReadBack) {
  const std::string odd = "a;b:c d%e\nf\xff=,/";
  const std::string suffix = detail::holder_suffix(odd);
  // Only the separators: no ':' (a waiter's mark follows one), no space (waiters' ids travel
  // space-separated), no control byte; three ';' between four fields after the first.
  EXPECT_EQ(suffix.find(':'), std::string::npos) << suffix;
  EXPECT_EQ(suffix.find(' '), std::string::npos) << suffix;
  EXPECT_EQ(suffix.find('\n'), std::string::npos) << suffix;
  EXPECT_EQ(std::count(suffix.begin(), suffix.end(), ';'), 4) << suffix;
  const StoredLease stored = read_stored_lease(LeaseId::generate().hex() + suffix);
  ASSERT_TRUE(stored.holder) << suffix;
  EXPECT_EQ(stored.holder->label, odd);
}

TEST(HolderIdentity, AWaitersMarkIsNotPartOfTheHolder) {
  const std::string id = LeaseId::generate().hex();
  const std::string head = LeaseId::generate().hex() + detail::holder_suffix("waiter");
  const std::string holder = detail::holder_suffix("holder");
  const StoredLease stored = read_stored_lease(id + holder + ":" + head);
  EXPECT_EQ(stored.id_hex, id);
  EXPECT_EQ(stored.value, id + holder) << "the lease's value, as adopt() takes it";
  ASSERT_TRUE(stored.holder);
  EXPECT_EQ(stored.holder->label, "holder");
  EXPECT_EQ(read_stored_lease(id + ":" + head).id_hex, id) << "a bare id, marked";
  EXPECT_FALSE(read_stored_lease(id + ":" + head).holder);
  EXPECT_EQ(read_stored_lease(id + ":" + head).value, id);
}

TEST(HolderIdentity, OffLeavesTheBareIdAndAnUnknownSuffixIsTheIdAlone) {
  set_holder_identity(false);
  const std::string off = detail::holder_suffix("label");
  set_holder_identity(true);
  EXPECT_EQ(off, "");
  const std::string id = LeaseId::generate().hex();
  EXPECT_FALSE(read_stored_lease(id).holder);
  EXPECT_EQ(read_stored_lease(id).id_hex, id);
  for (const std::string_view odd :
       {";only;three;fields", ";h;not-a-pid;l;1", ";h;1;l;2;extra", ";h%zz;1;l;2", ";h;1;l%4;2"}) {
    const StoredLease stored = read_stored_lease(id + std::string(odd));
    EXPECT_EQ(stored.id_hex, id) << odd;
    EXPECT_FALSE(stored.holder) << odd;
  }
  EXPECT_TRUE(read_stored_lease(id + ";h;1;l;2").holder);
}

TEST(HolderIdentity, AStampTheClockCannotHoldIsNoHolder) {
  // fuzz/corpus/lease_value/stamp_out_of_range: milliseconds that overflow the system clock's
  // nanoseconds are the id alone, not a holder taken at some wrapped-around moment.
  const std::string id = LeaseId::generate().hex();
  for (const std::string_view stamp : {"9223372036854775807", "-9223372036854775808",
                                       "1764763223201370123", "9223372036855", "-9223372036855"}) {
    const StoredLease stored = read_stored_lease(id + ";h;1;l;" + std::string(stamp));
    EXPECT_EQ(stored.id_hex, id) << stamp;
    EXPECT_FALSE(stored.holder) << stamp;
  }
  const StoredLease latest = read_stored_lease(id + ";h;1;l;9223372036854");
  ASSERT_TRUE(latest.holder);
  EXPECT_EQ(latest.holder->taken_at.time_since_epoch(), 9223372036854ms);
}

TEST(HolderIdentity, AForkedChildTakesLeasesAsItself) {
  const std::string parent = detail::holder_suffix();  // the parent's prefix is cached now
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const StoredLease stored =
        read_stored_lease(LeaseId::generate().hex() + detail::holder_suffix());
    ::_exit(stored.holder && stored.holder->pid == ::getpid() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the child's leases named the parent";
  EXPECT_EQ(read_stored_lease(LeaseId::generate().hex() + parent).holder->pid, ::getpid());
}

TEST(HolderIdentity, ALongLabelIsCut) {
  const std::string suffix = detail::holder_suffix(std::string(1000, 'x'));
  const StoredLease stored = read_stored_lease(LeaseId::generate().hex() + suffix);
  ASSERT_TRUE(stored.holder);
  EXPECT_EQ(stored.holder->label, std::string(64, 'x'));
}

}  // namespace
}  // namespace leasehold
