# Installation and packaging: the user binaries in bin/ (developer ones in libexec/layerbench/),
# the scripts a user runs, man pages made from each binary's --help by help2man, a CMake package
# (imported executables), and a Debian package through CPack (`cpack -G DEB` in the build tree).

# ---- scripts -------------------------------------------------------------------------------
install(PROGRAMS bench/scripts/quickstart.sh DESTINATION "${CMAKE_INSTALL_BINDIR}" RENAME layerbench-quickstart)
# The GPU scripts (gpu_*.sh with their environment and GPU check) build and run from a source
# tree; installed, they are there to read and to run in one.
file(GLOB _lb_gpu_scripts CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/bench/scripts/gpu_*.sh")
install(PROGRAMS ${_lb_gpu_scripts}
          bench/scripts/deps.sh bench/scripts/require_gpu.sh bench/scripts/snapshot.sh
          bench/scripts/compare_nccl_tests.py bench/scripts/ncu_summary.py
        DESTINATION "${CMAKE_INSTALL_DATADIR}/layerbench/scripts")

# ---- man pages -------------------------------------------------------------------------------
set(LAYERBENCH_MAN "AUTO" CACHE STRING "Man pages from --help with help2man: AUTO (when found), ON or OFF")
set_property(CACHE LAYERBENCH_MAN PROPERTY STRINGS AUTO ON OFF)
if(NOT LAYERBENCH_MAN STREQUAL "OFF")
  find_program(LAYERBENCH_HELP2MAN help2man)
  if(NOT LAYERBENCH_HELP2MAN AND LAYERBENCH_MAN STREQUAL "ON")
    message(FATAL_ERROR "LAYERBENCH_MAN=ON but help2man was not found (Debian package help2man)")
  endif()
endif()
if(LAYERBENCH_HELP2MAN AND NOT LAYERBENCH_MAN STREQUAL "OFF")
  set(_lb_man_layerbench-coll "nccl-tests-style collective sweeps on NCCL or MPI")
  set(_lb_man_layerbench-moe "component profile of the MAGI-2 multi-head MoE layer")
  set(_lb_man_layerbench-attn "sequence-parallel attention topologies, component by component")
  set(_lb_man_layerbench-ab "interleaved A/B studies, paired analysis and sample-size plans")
  set(_lb_man_layerbench-gate "CI gate on significant and relevant performance regressions")
  set(_lb_man_layerbench-report "markdown, CSV and HTML reports of layerbench results")
  set(_lb_man_layerbench-history "CI performance history: change points confirmed by interleaved pairs")
  get_property(_lb_bins GLOBAL PROPERTY LAYERBENCH_USER_BINARIES)
  set(_lb_pages)
  foreach(_bin IN LISTS _lb_bins)
    set(_page "${PROJECT_BINARY_DIR}/man/${_bin}.1")
    set(_desc "${_lb_man_${_bin}}")
    if(NOT _desc)
      set(_desc "part of layerbench")
    endif()
    # The MPI binaries start as one-rank singletons to print their help; as root Open MPI
    # needs to be told that this is intended.
    add_custom_command(OUTPUT "${_page}"
      COMMAND "${CMAKE_COMMAND}" -E make_directory "${PROJECT_BINARY_DIR}/man"
      COMMAND "${CMAKE_COMMAND}" -DHELP2MAN=${LAYERBENCH_HELP2MAN} -DBINARY=$<TARGET_FILE:${_bin}>
              -DNAME=${_bin} "-DDESCRIPTION=${_desc}" -DOUTPUT=${_page}
              -P "${PROJECT_SOURCE_DIR}/cmake/LayerbenchMan.cmake"
      DEPENDS ${_bin} "${PROJECT_SOURCE_DIR}/cmake/LayerbenchMan.cmake"
      COMMENT "Man page ${_bin}.1"
      VERBATIM)
    list(APPEND _lb_pages "${_page}")
  endforeach()
  add_custom_target(man ALL DEPENDS ${_lb_pages})
  install(FILES ${_lb_pages} DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")
endif()

# ---- CMake package: imported executables, e.g. $<TARGET_FILE:layerbench::layerbench-coll> ---
include(CMakePackageConfigHelpers)
set(_lb_cmake_dir "${CMAKE_INSTALL_LIBDIR}/cmake/layerbench")
install(EXPORT layerbenchTargets NAMESPACE layerbench:: DESTINATION "${_lb_cmake_dir}")
file(WRITE "${PROJECT_BINARY_DIR}/layerbenchConfig.cmake.in"
     "@PACKAGE_INIT@\ninclude(\"\${CMAKE_CURRENT_LIST_DIR}/layerbenchTargets.cmake\")\n")
configure_package_config_file("${PROJECT_BINARY_DIR}/layerbenchConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/layerbenchConfig.cmake" INSTALL_DESTINATION "${_lb_cmake_dir}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/layerbenchConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/layerbenchConfig.cmake" "${PROJECT_BINARY_DIR}/layerbenchConfigVersion.cmake"
        DESTINATION "${_lb_cmake_dir}")

# ---- Debian package --------------------------------------------------------------------------
set(CPACK_PACKAGE_NAME layerbench)
set(CPACK_PACKAGE_VENDOR "layerbench")
set(CPACK_PACKAGE_CONTACT "layerbench maintainers <maintainers@layerbench.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# mpirun for the MPI binaries; man-db for the pages. Shared-library dependencies are computed by
# dpkg-shlibdeps, except for a CUDA build whose toolkit libraries no Debian package owns (the
# RPATH points at them; such a package is for machines with that toolkit installed).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "openmpi-bin")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "man-db")
if(LAYERBENCH_HAVE_CUDA)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "openmpi-bin, libopenmpi3, libfmt9, libbenchmark1debian")
  set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "built with CUDA ${CUDAToolkit_VERSION}: needs that toolkit, NCCL and cuDNN")
else()
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
include(CPack)
