# Makes the Debian package of the build tree with cpack, unpacks it into WORK_DIR/root with
# dpkg-deb -x, and checks what a user gets: the command, its man page, its bash completion, and the
# library with its headers and CMake package files, against which the consumer project builds.
#
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=tests/packaging -DWORK_DIR=... -DCPACK=... -DVERSION=...
#         [-DWITH_REDIS=leasehold-with-redis] -P deb.cmake

foreach(tool dpkg-deb help2man)
  find_program(${tool}_path ${tool})
  if(NOT ${tool}_path)
    message("leasehold-deb-test: skipped: ${tool} is not installed (scripts/setup installs it)")
    return()
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

function(expect_match what text regex)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what} does not match '${regex}':\n${text}")
  endif()
  message(STATUS "ok: ${what}")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# The package.
run("cpack -G DEB" ${CPACK} -G DEB --config ${BUILD_DIR}/CPackConfig.cmake -B ${WORK_DIR}/cpack)
file(GLOB debs ${WORK_DIR}/cpack/leasehold_*.deb)
list(LENGTH debs count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "cpack made ${count} packages leasehold_*.deb, not one: ${debs}")
endif()
message(STATUS "package: ${debs}")

run("dpkg-deb --field" dpkg-deb --field ${debs})
message(STATUS "control:\n${out}")
expect_match("Package" "${out}" "(^|\n)Package: leasehold\n")
expect_match("Version" "${out}" "\nVersion: ${VERSION}\n")
expect_match("Depends" "${out}" "\nDepends: [^\n]*libhiredis[^\n]*\n")
expect_match("Depends" "${out}" "\nDepends: [^\n]*libssl[^\n]*\n")
expect_match("Maintainer" "${out}" "\nMaintainer: [^\n]+\n")
expect_match("Homepage" "${out}" "\nHomepage: [^\n]+\n")
expect_match("Description" "${out}" "\nDescription: [^\n]+\n ")

run("dpkg-deb --contents" dpkg-deb --contents ${debs})
string(REGEX MATCHALL "\\./[^\n]*" paths "${out}")
foreach(path IN LISTS paths)
  if(NOT path MATCHES "^\\./(usr/)?$" AND NOT path MATCHES "^\\./usr/")
    message(FATAL_ERROR "the package installs outside /usr: ${path}")
  endif()
endforeach()

set(root ${WORK_DIR}/root)
run("dpkg-deb -x" dpkg-deb -x ${debs} ${root})
file(GLOB_RECURSE library ${root}/usr/lib*/libleasehold.a)
file(GLOB_RECURSE config ${root}/usr/lib*/leaseholdConfig.cmake)
set(man_page ${root}/usr/share/man/man1/leasehold.1.gz)
set(completion ${root}/usr/share/bash-completion/completions/leasehold)
foreach(file ${root}/usr/bin/leasehold ${man_page} ${completion}
             ${root}/usr/include/leasehold/leasehold.hpp "${library}" "${config}")
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "the package lacks ${file} (library: '${library}', config: '${config}')")
  endif()
  message(STATUS "ok: ${file}")
endforeach()

# The command, from where the package put it.
run("leasehold --help" ${root}/usr/bin/leasehold --help)
expect_match("leasehold --help" "${out}" "\n  run +run COMMAND")
run("leasehold --version" ${root}/usr/bin/leasehold --version)
expect_match("leasehold --version" "${out}" "^leasehold ${VERSION}\n")

# The man page: generated from the help, one section per subcommand, and man reads it.
run("gzip -dc the man page" gzip -dc ${man_page})
expect_match("leasehold.1" "${out}" "\n\\.TH LEASEHOLD \"1\"")
expect_match("leasehold.1" "${out}" "\n\\.SS \"leasehold run \\[OPTIONS\\] \\[NAME\\.\\.\\.\\]")
expect_match("leasehold.1" "${out}" "\\\\fB\\\\-\\\\-exclusive\\\\fR")
find_program(man_path man)
if(man_path)
  run("man -l" ${CMAKE_COMMAND} -E env MANPAGER=cat MANWIDTH=100 LC_ALL=C.UTF-8
      ${man_path} -l ${man_page})
  expect_match("man -l leasehold.1.gz" "${out}" "leasehold release \\[OPTIONS\\] \\[NAME\\]")
endif()

# The bash completion, with the packaged command first on PATH; lease names against a private
# redis-server when the test has one.
set(completion_test bash ${SOURCE_DIR}/completion.bash ${completion})
if(WITH_REDIS)
  set(completion_test ${WITH_REDIS} -- ${completion_test})
endif()
run("the completion test" ${CMAKE_COMMAND} -E env --unset=LEASEHOLD_REDIS_URL
    "PATH=${root}/usr/bin:$ENV{PATH}" ${completion_test})
message(STATUS "${out}")

# A find_package consumer built against the unpacked package.
run("configuring the consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/consumer
    -DCMAKE_PREFIX_PATH=${root}/usr)
file(STRINGS ${WORK_DIR}/consumer/CMakeCache.txt found REGEX "^leasehold_DIR:")
string(FIND "${found}" "=${root}/usr/lib" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the consumer found leasehold elsewhere than in ${root}: ${found}")
endif()
run("building the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run("the consumer" ${WORK_DIR}/consumer/consumer)
message(STATUS "consumer: ${out}")
