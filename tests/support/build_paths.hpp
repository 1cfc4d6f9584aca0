// Where this build put the programs the tests run, and where the sources are. They are defined in
// one generated file (build_paths.cpp in the build folder), so that no other object of the tests
// depends on where the tree was cloned or built: the compiler cache shares those between clones.
#pragma once

namespace leasehold::testing::build_paths {

extern const char* const source_dir;            // the source tree's root
extern const char* const cli;                   // the leasehold command
extern const char* const test_worker;           // leasehold-test-worker
extern const char* const torture_worker;        // leasehold-torture-worker ("" when not built)
extern const char* const postgres_example;      // examples/postgres_fencing ("" when not built)
extern const char* const interop_python;        // the python3 that runs redis-py's driver
extern const char* const interop_node;          // the node that runs node-redlock's driver
extern const char* const interop_node_modules;  // where `npm ci` installs node-redlock
extern const char* const lua_scripts;           // the library's complete Lua scripts

}  // namespace leasehold::testing::build_paths
