# leasehold_discover_test_suites(TARGET LABEL label TIMEOUT seconds
#                                [TIMED suite... PROCESSORS n])
#
# One CTest test per GoogleTest suite of a test program, where gtest_discover_tests makes one per
# test: a suite's tests run in one process. A sanitizer's runtime takes 0.1-0.4 s of CPU to start
# and exit a process of this project's test programs, more than most of their tests take;
# scripts/test says which tiers run this way. Every test of the program still runs, and a failure
# names its test in the output. Suites are listed when ctest runs (like gtest_discover_tests'
# PRE_TEST mode), so a rebuild that adds one needs no new configure. The TIMED suites get the
# PROCESSORS property (their tests time what they run against the machine's clock).
function(leasehold_discover_test_suites target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "LABEL;TIMEOUT;PROCESSORS" "TIMED")
  set(script ${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake)
  if(NOT arg_PROCESSORS)
    set(arg_PROCESSORS 1)
  endif()
  file(GENERATE OUTPUT ${script} CONTENT "\
set(program \"$<TARGET_FILE:${target}>\")
set(timed_suites ${arg_TIMED})
if(NOT EXISTS \"\${program}\")
  add_test(${target}_NOT_BUILT \"\${program}\")
  return()
endif()
execute_process(COMMAND \"\${program}\" --gtest_list_tests OUTPUT_VARIABLE listing
                RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR \"\${program} --gtest_list_tests failed: \${result}\")
endif()
string(REPLACE \"\\n\" \";\" lines \"\${listing}\")
foreach(line IN LISTS lines)
  if(line MATCHES \"^([A-Za-z_][A-Za-z0-9_/]*)\\\\.\")
    set(suite \"\${CMAKE_MATCH_1}\")
    add_test(\"\${suite}\" \"\${program}\" \"--gtest_filter=\${suite}.*\")
    list(FIND timed_suites \"\${suite}\" timed)
    set(processors 1)
    if(timed GREATER -1)
      set(processors ${arg_PROCESSORS})
    endif()
    set_tests_properties(\"\${suite}\" PROPERTIES LABELS ${arg_LABEL} TIMEOUT ${arg_TIMEOUT}
                         PROCESSORS \${processors})
  endif()
endforeach()
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${script})
endfunction()
