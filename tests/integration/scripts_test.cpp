// The library's Lua scripts, as the build wrote them out whole (src/<layer>/scripts/, includes
// resolved): each one compiles in a real Redis, and is the very text the library sends.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "build_paths.hpp"
#include "child_process.hpp"
#include "leasehold/describe.hpp"
#include "leasehold/queue.hpp"
#include "leasehold/rwlock.hpp"
#include "leasehold/semaphore.hpp"
#include "scripts.hpp"
#include "shared_server.hpp"

namespace leasehold {
namespace {

using testing::read_file;

class ScriptsTest : public testing::SharedServerTest {};

std::map<std::string, std::string> built_scripts() {
  std::map<std::string, std::string> scripts;
  for (const auto& entry : std::filesystem::directory_iterator(testing::build_paths::lua_scripts))
    if (entry.path().extension() == ".lua")
      scripts.emplace(entry.path().stem().string(), read_file(entry.path().string()));
  return scripts;
}

TEST_F(ScriptsTest, EveryScriptCompiles) {
  const auto scripts = built_scripts();
  EXPECT_GE(scripts.size(), 21u) << "the build wrote out fewer scripts than the library has";
  for (const auto& [name, body] : scripts) {
    const Reply loaded = server_->command({"SCRIPT", "LOAD", body});
    EXPECT_EQ(loaded.type, Reply::Type::string) << name << ".lua: " << to_string(loaded);
    EXPECT_EQ(body.find("--! include"), std::string::npos) << name << ".lua: an include is left";
  }
}

TEST_F(ScriptsTest, TheLibrarySendsTheScriptsAsTheyAreWritten) {
  const std::map<std::string, const Script*> library = {
      {"lease_status", &detail::lease_status_script()},
      {"lock_extend", &detail::lock_extend_script()},
      {"lock_force_release", &detail::lock_force_release_script()},
      {"lock_in_turn", &detail::lock_in_turn_script()},
      {"lock_leave_queue", &detail::leave_queue_script()},
      {"lock_release", &detail::lock_release_script()},
      {"lock_try_fenced", &detail::lock_try_fenced_script()},
      {"permit_acquire", &detail::permit_acquire_script()},
      {"permit_extend", &detail::permit_extend_script()},
      {"permit_force_release", &detail::permit_force_release_script()},
      {"permit_in_turn", &detail::permit_in_turn_script()},
      {"permit_leave_queue", &detail::permit_leave_queue_script()},
      {"permit_release", &detail::permit_release_script()},
      {"rw_by_id", &detail::rw_by_id_script()},
      {"rw_force_release", &detail::rw_force_release_script()},
      {"rw_in_turn", &detail::rw_in_turn_script()},
      {"rw_leave_queue", &detail::rw_leave_queue_script()},
      {"rw_read_extend", &detail::rw_read_extend_script()},
      {"rw_read_release", &detail::rw_read_release_script()},
      {"rw_try_read", &detail::rw_try_read_script()},
      {"rw_try_write", &detail::rw_try_write_script()},
      {"rw_write_extend", &detail::rw_write_extend_script()},
      {"rw_write_release", &detail::rw_write_release_script()},
  };
  const auto scripts = built_scripts();
  for (const auto& [name, script] : library) {
    const auto built = scripts.find(name);
    ASSERT_NE(built, scripts.end()) << name << ".lua was not written out";
    EXPECT_EQ(built->second, script->body()) << name;
    EXPECT_EQ(server_->command({"SCRIPT", "LOAD", built->second}).str, script->sha1()) << name;
  }
}

}  // namespace
}  // namespace leasehold
