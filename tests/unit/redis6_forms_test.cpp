// What a connection sends a server without Redis 7's additions (Redis6Forms). No server.
#include "redis6_forms.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codec.hpp"

namespace leasehold::detail {
namespace {

std::vector<std::string> args_of(const Request& request) {
  return codec::parse_command(request.bytes());
}

TEST(Redis6Forms, SetNxPxGetBecomesAScriptWithTheSameKeyValueAndTtl) {
  Redis6Forms forms;
  const Request acquire =
      Request::command({"SET", "lock:{a}", "id;host", "NX", "PX", "30000", "GET"})
          .for_key("lock:{a}")
          .retry_safe()
          .grants_lease();
  const std::optional<Request> form = forms.form_of(acquire);
  ASSERT_TRUE(form);
  ASSERT_TRUE(form->is_script()) << "a script call like any other: EVAL first, then EVALSHA";
  EXPECT_NE(form->script()->body().find("redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])"),
            std::string::npos)
      << form->script()->body();
  EXPECT_EQ(forms.script_of(acquire), form->script());
  const std::vector<std::string> args = args_of(*form);
  ASSERT_EQ(args.size(), 6u);
  EXPECT_EQ(args[0], "EVALSHA");
  EXPECT_EQ(args[1], form->script()->sha1());
  EXPECT_EQ(args[2], "1");
  EXPECT_EQ(args[3], "lock:{a}");
  EXPECT_EQ(args[4], "id;host");
  EXPECT_EQ(args[5], "30000");
  EXPECT_TRUE(form->is_retry_safe());
  EXPECT_TRUE(form->is_lease_grant());
  EXPECT_EQ(form->slot(), acquire.slot());
  const std::vector<std::string> eval = args_of(form->eval_fallback());
  EXPECT_EQ(eval[0], "EVAL");
  EXPECT_EQ(eval[1], form->script()->body());
}

TEST(Redis6Forms, OtherCommandsGoAsTheyAre) {
  Redis6Forms forms;
  EXPECT_FALSE(forms.form_of(Request::command({"SET", "k", "v", "NX", "PX", "100"})));
  EXPECT_FALSE(forms.form_of(Request::command({"SET", "k", "v", "XX", "PX", "100", "GET"})));
  EXPECT_FALSE(forms.form_of(Request::command({"GET", "k"})));
  EXPECT_FALSE(forms.form_of(Request::command({"SADD", "k", "a", "b", "c", "d", "e"})));
  EXPECT_TRUE(is_set_nx_px_get(Request::command({"set", "k", "v", "nx", "px", "100", "get"})));
}

TEST(Redis6Forms, AScriptThatPublishesShardedPublishesPlainlyAndOthersGoAsTheyAre) {
  Redis6Forms forms;
  const Script telling(
      "redis.call('DEL', KEYS[1]) redis.pcall('SPUBLISH', ARGV[1], 'x') "
      "redis.pcall('SPUBLISH', ARGV[1], 'y') return 1");
  const std::string_view keys[] = {"lock:{a}"};
  const std::string_view argv[] = {"lock:{a}:released"};
  const Request release = Request::script(telling, keys, argv).retry_safe();
  const std::string plain =
      "redis.call('DEL', KEYS[1]) redis.pcall('PUBLISH', ARGV[1], 'x') "
      "redis.pcall('PUBLISH', ARGV[1], 'y') return 1";
  for (int round = 0; round < 2; ++round) {  // the second from what the first learnt
    const std::optional<Request> form = forms.form_of(release);
    ASSERT_TRUE(form);
    ASSERT_TRUE(form->is_script());
    EXPECT_EQ(form->script()->body(), plain);
    EXPECT_EQ(forms.script_of(release), form->script());
    const std::vector<std::string> args = args_of(*form);
    ASSERT_EQ(args.size(), 5u);
    EXPECT_EQ(args[0], "EVALSHA");
    EXPECT_EQ(args[1], form->script()->sha1());
    EXPECT_EQ(args[3], "lock:{a}");
    EXPECT_EQ(args[4], "lock:{a}:released");
    EXPECT_TRUE(form->is_retry_safe());
  }

  const Script quiet("return redis.call('GET', KEYS[1])");
  const Request read = Request::script(quiet, keys, {});
  EXPECT_FALSE(forms.form_of(read));
  EXPECT_EQ(forms.script_of(read), &quiet);
  EXPECT_EQ(forms.script_of(Request::command({"GET", "k"})), nullptr);
}

}  // namespace
}  // namespace leasehold::detail
