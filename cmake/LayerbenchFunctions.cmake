# lb_add_library(NAME SOURCES ... [CUDA_SOURCES ...] [DEPS ...])
#   One library per module. CUDA_SOURCES are compiled only when the CUDA paths are enabled.
function(lb_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;CUDA_SOURCES;DEPS;CUDA_DEPS" ${ARGN})
  set(_srcs ${ARG_SOURCES})
  if(LAYERBENCH_HAVE_CUDA)
    list(APPEND _srcs ${ARG_CUDA_SOURCES})
  endif()
  add_library(${name} STATIC ${_srcs})
  target_include_directories(${name} PUBLIC "${PROJECT_SOURCE_DIR}")
  target_link_libraries(${name} PUBLIC lb_options ${ARG_DEPS} PRIVATE lb_warnings)
  if(LAYERBENCH_HAVE_CUDA)
    target_link_libraries(${name} PUBLIC ${ARG_CUDA_DEPS})
    set_target_properties(${name} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF
                                             POSITION_INDEPENDENT_CODE ON)
  endif()
endfunction()

# lb_add_binary(NAME SOURCES ... DEPS ... [DEV]): a thin main linked against module libraries.
# User binaries install into bin/ (with a man page made from their --help); DEV ones (developer
# benchmarks and kernel studies) into libexec/layerbench/, out of PATH.
function(lb_add_binary name)
  cmake_parse_arguments(ARG "DEV" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE lb_options lb_warnings ${ARG_DEPS})
  if(ARG_DEV)
    install(TARGETS ${name} RUNTIME DESTINATION "${CMAKE_INSTALL_LIBEXECDIR}/layerbench")
  else()
    install(TARGETS ${name} EXPORT layerbenchTargets RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
    set_property(GLOBAL APPEND PROPERTY LAYERBENCH_USER_BINARIES ${name})
  endif()
endfunction()

# lb_add_test(NAME SOURCES ... DEPS ... [LABELS ...]): a GoogleTest binary, one CTest entry.
function(lb_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE lb_options lb_warnings ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT 300)
  if("gpu" IN_LIST ARG_LABELS)
    set_tests_properties(${name} PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  PASSED  \\] 0 tests"
                                               ENVIRONMENT "GTEST_COLOR=no")
  endif()
endfunction()

# lb_add_mpi_test(NAME TARGET NP [ARGS ...] [LABELS ...]): run a binary under mpirun -np NP.
# Oversubscription is allowed so CI's 2 cores can run 4 or 8 ranks.
function(lb_add_mpi_test name)
  cmake_parse_arguments(ARG "" "TARGET;NP;TIMEOUT" "ARGS;LABELS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${name}
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ARG_NP} --oversubscribe
                   ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${ARG_TARGET}> ${ARG_ARGS} ${MPIEXEC_POSTFLAGS})
  set_tests_properties(${name} PROPERTIES LABELS "mpi;${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
                       PROCESSORS ${ARG_NP})
  if("gpu" IN_LIST ARG_LABELS)
    # When GTEST_SKIP skipped every case (no device), CTest shows the test as skipped, not passed.
    set_tests_properties(${name} PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  PASSED  \\] 0 tests"
                                               ENVIRONMENT "GTEST_COLOR=no")
  endif()
endfunction()
