# Sourced by scripts/test and scripts/demo: the CMake arguments of the builds the suites run in.
# Each keeps line tables only (-g1): a sanitizer's report and a debugger's backtrace still name
# files and lines, and the compiler spends a third less time than on full debug information.

# The plain build, scripts/demo's too: optimised as a user's RelWithDebInfo build is.
plain_build=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")

# ASan+UBSan, unoptimised: every check, with no optimisation that could hide a bad access.
asan_build=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g1"
  -DLEASEHOLD_SANITIZE=address,undefined -DLEASEHOLD_BUILD_BENCH=OFF)

# TSan at -O1 (its documentation asks for -O1 or more): it compiles in half the time of -O2.
tsan_build=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
  -DLEASEHOLD_SANITIZE=thread -DLEASEHOLD_BUILD_BENCH=OFF)
