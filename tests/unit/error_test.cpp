#include <gtest/gtest.h>

#include <iterator>

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
  EXPECT_EQ(classify_error_reply("ERR The user executing the script can't run this command or "
                                 "subcommand script: 8d07c0, on @user_script:121."),
            errc::no_permission);
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

// Every code, and the conditions it is of: a code added to errc must be placed here.
struct Kinds {
  errc code;
  bool fatal = false;
  bool transient = false;
  bool outcome_unknown = false;
  bool usage = false;
};
constexpr Kinds kKinds[] = {
    {.code = errc::invalid_url, .usage = true},
    {.code = errc::invalid_argument, .usage = true},
    {.code = errc::called_from_io_thread, .usage = true},
    {.code = errc::connect_failed, .transient = true},
    {.code = errc::connect_timeout, .transient = true},
    {.code = errc::command_timeout, .transient = true, .outcome_unknown = true},
    {.code = errc::connection_lost, .transient = true, .outcome_unknown = true},
    {.code = errc::closed},
    {.code = errc::protocol_error},
    {.code = errc::auth_failed, .fatal = true},
    {.code = errc::select_failed, .fatal = true},
    {.code = errc::server_error},
    {.code = errc::wrong_type},
    {.code = errc::out_of_memory},
    {.code = errc::no_permission},
    {.code = errc::no_script, .transient = true},
    {.code = errc::server_busy, .transient = true},
    {.code = errc::server_loading, .transient = true},
    {.code = errc::read_only_replica},
    {.code = errc::unexpected_reply},
    {.code = errc::lease_lost},
    {.code = errc::lock_busy},
    {.code = errc::cross_slot, .usage = true},
    {.code = errc::not_replicated},
    {.code = errc::tls_failed, .fatal = true},
    {.code = errc::hold_budget_exceeded},
};

TEST(ErrorConditions, EveryCodeIsOfTheConditionsItsKindCallsFor) {
  // Every code is listed, in errc's order. A code added after hold_budget_exceeded has a
  // sentence, and then this fails until the code is listed here too.
  ASSERT_EQ(std::size(kKinds), static_cast<std::size_t>(errc::hold_budget_exceeded));
  EXPECT_EQ(std::error_code(static_cast<int>(std::size(kKinds)) + 1, category()).message(),
            "Unknown leasehold error.");
  for (std::size_t i = 0; i < std::size(kKinds); ++i) {
    const Kinds& kinds = kKinds[i];
    ASSERT_EQ(static_cast<std::size_t>(kinds.code), i + 1);
    const std::error_code code = kinds.code;
    EXPECT_EQ(code == condition::fatal, kinds.fatal) << code.message();
    EXPECT_EQ(code == condition::transient, kinds.transient) << code.message();
    EXPECT_EQ(code == condition::outcome_unknown, kinds.outcome_unknown) << code.message();
    EXPECT_EQ(code == condition::usage, kinds.usage) << code.message();
    EXPECT_EQ(code != condition::fatal, !kinds.fatal) << code.message();
  }
}

TEST(ErrorConditions, OnlyLeaseholdCodesAreOfAny) {
  for (condition kind :
       {condition::fatal, condition::transient, condition::outcome_unknown, condition::usage}) {
    EXPECT_NE(std::error_code{}, kind);
    EXPECT_NE(std::make_error_code(std::errc::timed_out), kind);
    EXPECT_NE(std::make_error_code(std::errc::connection_refused), kind);
    // The same numbers in another category are other errors.
    for (int value = 1; value <= static_cast<int>(errc::hold_budget_exceeded); ++value)
      EXPECT_NE(std::error_code(value, std::generic_category()), kind) << value;
  }
}

TEST(ErrorConditions, ConditionsHaveTheirOwnCategoryAndSentences) {
  for (condition kind :
       {condition::fatal, condition::transient, condition::outcome_unknown, condition::usage}) {
    const std::error_condition as_condition = kind;
    EXPECT_STREQ(as_condition.category().name(), "leasehold.condition");
    EXPECT_NE(as_condition.category(), category());
    const std::string message = as_condition.message();
    EXPECT_NE(message, "Unknown leasehold condition.");
    EXPECT_EQ(message.back(), '.') << message;
  }
  EXPECT_NE(std::error_condition(condition::fatal), std::error_condition(condition::usage));
}

TEST(ErrorConditions, AnErrorThrownKeepsItsConditions) {
  try {
    throw_if(errc::tls_failed, "the server's certificate is not trusted");
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), condition::fatal);
    EXPECT_NE(e.code(), condition::transient);
  }
}

TEST(ErrorConditions, ErrorRepliesFallUnderTheirConditions) {
  EXPECT_EQ(classify_error_reply("BUSY Redis is busy running a script."), condition::transient);
  EXPECT_EQ(classify_error_reply("LOADING Redis is loading the dataset in memory"),
            condition::transient);
  EXPECT_EQ(classify_error_reply("WRONGPASS invalid username-password pair"), condition::fatal);
  EXPECT_NE(classify_error_reply("READONLY You can't write against a read only replica."),
            condition::transient);
  EXPECT_NE(classify_error_reply("ERR unknown command 'FOO'"), condition::transient);
}

}  // namespace
}  // namespace leasehold
