# Distro packages only, through find_package; nothing is vendored.
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(fmt REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json 3.10 CONFIG REQUIRED)
find_package(Boost 1.74 CONFIG REQUIRED COMPONENTS headers)   # Boost.Math is header-only
find_package(benchmark CONFIG REQUIRED)
# RE2 (linear-time regular expressions) for layerbench-ab's regex metrics: no backtracking, so a
# long output line can never overflow the stack. Debian ships a pkg-config file, no CMake config.
find_package(PkgConfig REQUIRED)
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
# SQLite (libsqlite3-dev) for the history store of layerbench-history: one file, WAL, transactions.
find_package(SQLite3 REQUIRED)
if(LAYERBENCH_ENABLE_TESTING)
  find_package(GTest CONFIG REQUIRED)
endif()

# Recorded in every result file.
find_package(Git QUIET)
set(LAYERBENCH_GIT_SHA "unknown")
# A source export without .git (e.g. `git archive`) may carry its commit in a .git-sha file.
if(EXISTS "${PROJECT_SOURCE_DIR}/.git-sha")
  file(STRINGS "${PROJECT_SOURCE_DIR}/.git-sha" LAYERBENCH_GIT_SHA LIMIT_COUNT 1)
elseif(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --short=12 HEAD
                  WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
                  OUTPUT_VARIABLE LAYERBENCH_GIT_SHA OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE _lb_git_rc)
  if(NOT _lb_git_rc EQUAL 0)
    set(LAYERBENCH_GIT_SHA "unknown")
  endif()
endif()
