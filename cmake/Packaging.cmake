# The Debian package, `cpack -G DEB` in a build folder: the leasehold command with its man page
# and bash completion, the library, its headers and its CMake package files, under /usr.

# leasehold(1), made at build time from the built command's --help by help2man. Without help2man
# the ordinary build goes on without it; building the target leasehold_man then says what is
# missing, and cpack refuses to make a package (cmake/PackagingCheck.cmake says why). A sanitizer
# build makes no man page: it is no build to package.
set(LEASEHOLD_MAN_PAGE ${PROJECT_BINARY_DIR}/man/leasehold.1.gz)
find_program(LEASEHOLD_HELP2MAN help2man)
if(LEASEHOLD_HELP2MAN AND NOT LEASEHOLD_SANITIZE)
  set(man_script ${PROJECT_SOURCE_DIR}/apps/leasehold/man/make-man-page.sh)
  add_custom_command(OUTPUT ${LEASEHOLD_MAN_PAGE}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND sh ${man_script} ${LEASEHOLD_HELP2MAN} $<TARGET_FILE:leasehold_cli>
            ${LEASEHOLD_MAN_PAGE}
    DEPENDS leasehold_cli ${man_script}
    COMMENT "Generating leasehold(1) from leasehold --help"
    VERBATIM)
  add_custom_target(leasehold_man ALL DEPENDS ${LEASEHOLD_MAN_PAGE})
  install(FILES ${LEASEHOLD_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 OPTIONAL)
  set(man_page_missing "build it first: cmake --build ${PROJECT_BINARY_DIR}")
else()
  if(LEASEHOLD_SANITIZE)
    set(man_page_missing "a sanitizer build (LEASEHOLD_SANITIZE) makes none; package another")
  else()
    string(CONCAT man_page_missing "help2man is not installed: install it (scripts/setup "
                  "does), then configure and build again")
  endif()
  add_custom_target(leasehold_man
    COMMAND ${CMAKE_COMMAND} -E echo "leasehold(1): ${man_page_missing}"
    COMMAND ${CMAKE_COMMAND} -E false
    VERBATIM)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/apps/leasehold/completion/leasehold.bash
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME leasehold)

# Who distributes the package: set these when building one to hand out.
set(LEASEHOLD_PACKAGE_MAINTAINER "leasehold maintainers <leasehold@example.org>"
  CACHE STRING "The Maintainer field of the Debian package")
set(LEASEHOLD_PACKAGE_HOMEPAGE "https://example.org/leasehold"
  CACHE STRING "The Homepage field of the Debian package")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME leasehold)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "leasehold")
set(CPACK_PACKAGE_CONTACT ${LEASEHOLD_PACKAGE_MAINTAINER})
set(CPACK_PACKAGE_HOMEPAGE_URL ${LEASEHOLD_PACKAGE_HOMEPAGE})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "distributed leases on Redis: a command and a C++20 library")
set(CPACK_PACKAGE_DESCRIPTION
  "Leases on Redis that several hosts or replicas use to agree on who goes first. A lease is held
until it is released or its TTL runs out, so a crashed holder never blocks anyone for long.
The leasehold command runs a command under a lease (a distributed flock), runs a command once
per interval across hosts, and lists, shows and force-releases leases. The C++20 library, with
its headers and CMake package (find_package(leasehold)), gives locks, reader-writer locks and
semaphores, blocking or with Asio.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The runtime libraries, as dpkg-shlibdeps finds them in the command (it needs `file` too); where
# it is missing, Debian 12's names.
find_program(LEASEHOLD_DPKG_SHLIBDEPS dpkg-shlibdeps)
find_program(LEASEHOLD_FILE file)
if(LEASEHOLD_DPKG_SHLIBDEPS AND LEASEHOLD_FILE)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "libc6, libgcc-s1, libstdc++6, libhiredis0.14, libssl3, libncursesw6, libtinfo6")
endif()
# What a program built against the library with find_package(leasehold) needs as well.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libhiredis-dev, libssl-dev, libasio-dev, pkg-config")
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/PackagingCheck.cmake)
set(CPACK_LEASEHOLD_MAN_PAGE ${LEASEHOLD_MAN_PAGE})
set(CPACK_LEASEHOLD_MAN_PAGE_MISSING ${man_page_missing})
include(CPack)
