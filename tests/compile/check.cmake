# Compiles SOURCE with INCLUDE_DIRS (separated by |) and checks the outcome:
#   EXPECT=ok      the source must compile;
#   EXPECT=error   it must fail, with a diagnostic matching PATTERN (so it fails for the reason
#                  the test is about, not for a typo).
string(REPLACE "|" ";" dirs "${INCLUDE_DIRS}")
set(include_flags "")
foreach(dir IN LISTS dirs)
  list(APPEND include_flags -I${dir})
endforeach()
execute_process(
  COMMAND ${COMPILER} -std=c++20 -fsyntax-only -DASIO_SEPARATE_COMPILATION ${include_flags}
          ${SOURCE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(EXPECT STREQUAL "ok")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${SOURCE} should compile but did not:\n${err}")
  endif()
else()
  if(rc EQUAL 0)
    message(FATAL_ERROR "${SOURCE} compiled, but it must not")
  endif()
  if(NOT err MATCHES "${PATTERN}")
    message(FATAL_ERROR "${SOURCE} failed for another reason than '${PATTERN}':\n${err}")
  endif()
endif()
