# Read by cpack before it makes a package (CPACK_PROJECT_CONFIG_FILE): no package without the man
# page; cmake/Packaging.cmake says why it would be missing.
if(NOT EXISTS "${CPACK_LEASEHOLD_MAN_PAGE}")
  message(FATAL_ERROR "leasehold: no package without the man page ${CPACK_LEASEHOLD_MAN_PAGE}: "
                      "${CPACK_LEASEHOLD_MAN_PAGE_MISSING}")
endif()
