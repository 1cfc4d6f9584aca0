# Installs the interop tests' node packages into WORK_DIR/node_modules with `npm ci` from
# SOURCE_DIR's package-lock.json, unless they are there already from that very lock file.
#   cmake -DSOURCE_DIR=<tests/interop> -DWORK_DIR=<build>/tests/interop/node -P npm_ci.cmake
cmake_minimum_required(VERSION 3.20)

find_program(NPM npm)
if(NOT NPM)
  message(FATAL_ERROR "interop: npm is missing; scripts/setup installs Debian's nodejs and npm")
endif()

file(SHA256 ${SOURCE_DIR}/package-lock.json lock_hash)
set(stamp ${WORK_DIR}/node_modules/.leasehold-package-lock.sha256)
if(EXISTS ${stamp})
  file(READ ${stamp} installed_hash)
  if(installed_hash STREQUAL lock_hash AND EXISTS ${WORK_DIR}/node_modules/redlock/package.json)
    message(STATUS "interop: node packages already installed from this package-lock.json")
    return()
  endif()
endif()

file(MAKE_DIRECTORY ${WORK_DIR})
file(COPY ${SOURCE_DIR}/package.json ${SOURCE_DIR}/package-lock.json DESTINATION ${WORK_DIR})
execute_process(COMMAND ${NPM} ci --no-audit --no-fund --loglevel=error
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "interop: npm ci in ${WORK_DIR} failed (${result})")
endif()
file(WRITE ${stamp} ${lock_hash})
message(STATUS "interop: node packages installed in ${WORK_DIR}/node_modules")
