# CUDA parts are built whenever nvcc is found (LAYERBENCH_CUDA=AUTO), forced with ON, skipped with OFF.
# Sets LAYERBENCH_HAVE_CUDA and the imported targets lb::nccl and lb::cudnn.
set(LAYERBENCH_HAVE_CUDA OFF)
if(LAYERBENCH_CUDA STREQUAL "OFF")
  return()
endif()

# nvcc is often not on PATH; the toolkit's default prefix is a documented place to look.
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  find_program(_lb_nvcc nvcc HINTS ENV CUDA_PATH ENV CUDA_HOME PATH_SUFFIXES bin
               PATHS /usr/local/cuda/bin)
  if(_lb_nvcc)
    set(CMAKE_CUDA_COMPILER "${_lb_nvcc}" CACHE FILEPATH "CUDA compiler")
  endif()
endif()

include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  if(LAYERBENCH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LAYERBENCH_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
  message(STATUS "layerbench: nvcc not found, building the host backend only")
  return()
endif()

# Architecture: native when a GPU is visible, 90 (Hopper) otherwise. Presets or -D override.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  execute_process(COMMAND nvidia-smi -L RESULT_VARIABLE _lb_smi_rc OUTPUT_VARIABLE _lb_smi_out
                  ERROR_QUIET)
  if(_lb_smi_rc EQUAL 0 AND _lb_smi_out MATCHES "GPU 0")
    set(CMAKE_CUDA_ARCHITECTURES native)
  else()
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
endif()
enable_language(CUDA)
# CMake < 3.26 does not know C++20 for nvcc (CUDA_STANDARD 20 fails to generate), so the
# dialect is passed directly; nvcc 12+ accepts it.
target_compile_options(lb_options INTERFACE $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20 --expt-relaxed-constexpr>)
find_package(CUDAToolkit REQUIRED)
message(STATUS "layerbench: CUDA ${CUDAToolkit_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}")

# NCCL and cuDNN: in the toolkit's directory or system-wide; hints overridable.
set(LAYERBENCH_NCCL_ROOT "" CACHE PATH "Hint: NCCL install prefix")
set(LAYERBENCH_CUDNN_ROOT "" CACHE PATH "Hint: cuDNN install prefix (or a directory holding libcudnn.so.9)")
set(_lb_hints ${LAYERBENCH_NCCL_ROOT} ${LAYERBENCH_CUDNN_ROOT} $ENV{NCCL_HOME} $ENV{CUDNN_HOME}
              ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})

find_path(LB_NCCL_INCLUDE_DIR nccl.h HINTS ${_lb_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(LB_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_lb_hints} ${CUDAToolkit_LIBRARY_DIR}
             PATH_SUFFIXES lib lib64)
find_path(LB_CUDNN_INCLUDE_DIR cudnn_backend.h HINTS ${_lb_hints} ${CUDAToolkit_INCLUDE_DIRS}
          PATH_SUFFIXES include)
find_library(LB_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 HINTS ${_lb_hints} ${CUDAToolkit_LIBRARY_DIR}
             PATH_SUFFIXES lib lib64)

foreach(_v LB_NCCL_INCLUDE_DIR LB_NCCL_LIBRARY LB_CUDNN_INCLUDE_DIR LB_CUDNN_LIBRARY)
  if(NOT ${_v})
    if(LAYERBENCH_CUDA STREQUAL "ON")
      message(FATAL_ERROR "layerbench: ${_v} not found; set LAYERBENCH_NCCL_ROOT / LAYERBENCH_CUDNN_ROOT")
    endif()
    message(STATUS "layerbench: ${_v} not found, building the host backend only")
    return()
  endif()
endforeach()

add_library(lb::nccl UNKNOWN IMPORTED)
set_target_properties(lb::nccl PROPERTIES IMPORTED_LOCATION "${LB_NCCL_LIBRARY}"
                      INTERFACE_INCLUDE_DIRECTORIES "${LB_NCCL_INCLUDE_DIR}")
add_library(lb::cudnn UNKNOWN IMPORTED)
set_target_properties(lb::cudnn PROPERTIES IMPORTED_LOCATION "${LB_CUDNN_LIBRARY}"
                      INTERFACE_INCLUDE_DIRECTORIES "${LB_CUDNN_INCLUDE_DIR}")
message(STATUS "layerbench: NCCL ${LB_NCCL_LIBRARY}, cuDNN ${LB_CUDNN_LIBRARY}")

set(LAYERBENCH_HAVE_CUDA ON)
target_compile_definitions(lb_options INTERFACE LAYERBENCH_HAVE_CUDA=1)
