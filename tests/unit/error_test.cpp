#include <gtest/gtest.h>

#include "leasehold/error.hpp"
#include "leasehold/reply.hpp"

namespace leasehold {
namespace {

TEST(Errors, EveryCodeHasASentenceInTheLeaseholdCategory) {
  for (int value = static_cast<int>(errc::invalid_url); value <= static_cast<int>(errc::lease_lost);
       ++value) {
    const std::error_code code = static_cast<errc>(value);
    EXPECT_STREQ(code.category().name(), "leasehold");
    const std::string message = code.message();
    EXPECT_NE(message, "Unknown leasehold error.") << value;
    EXPECT_EQ(message.back(), '.') << message;
  }
}

TEST(Errors, ErrorRepliesAreClassifiedByTheirPrefix) {
  EXPECT_EQ(classify_error_reply("WRONGTYPE Operation against a key holding the wrong kind"),
            errc::wrong_type);
  EXPECT_EQ(classify_error_reply("OOM command not allowed when used memory > 'maxmemory'."),
            errc::out_of_memory);
  EXPECT_EQ(classify_error_reply("NOPERM this user has no permissions to run the 'eval' command"),
            errc::no_permission);
  EXPECT_EQ(classify_error_reply("NOSCRIPT No matching script. Please use EVAL."), errc::no_script);
  EXPECT_EQ(classify_error_reply("ERR Error running script (call to f_x): @user_script:1: "
                                 "WRONGTYPE Operation against a key"),
            errc::wrong_type);
  EXPECT_EQ(classify_error_reply("ERR unknown command 'FOO'"), errc::server_error);
}

TEST(Errors, ThrowIfCarriesTheDetailAndTheCode) {
  try {
    throw_if(errc::auth_failed, "Redis at 127.0.0.1:1 refused to log in");
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::auth_failed);
    EXPECT_NE(std::string(e.what()).find("refused to log in"), std::string::npos);
  }
  EXPECT_NO_THROW(throw_if({}));
}

}  // namespace
}  // namespace leasehold
