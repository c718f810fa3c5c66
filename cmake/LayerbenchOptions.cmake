# Flags live on interface targets linked PRIVATE; no global CMAKE_CXX_FLAGS.
add_library(lb_options INTERFACE)
add_library(lb_warnings INTERFACE)

target_compile_features(lb_options INTERFACE cxx_std_20)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

set(_lb_cxx_warnings -Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused
                     -Woverloaded-virtual -Wimplicit-fallthrough)
# GCC 12's -Wrestrict/-Wstringop-overflow fire inside libstdc++'s std::string at -O2
# (GCC bug 105329): false positives that would break -Werror builds.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND _lb_cxx_warnings -Wno-restrict -Wno-stringop-overflow)
endif()
if(LAYERBENCH_WERROR)
  list(APPEND _lb_cxx_warnings -Werror)
endif()
target_compile_options(lb_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:${_lb_cxx_warnings}>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall -lineinfo -Xptxas=--warn-on-spills>)

if(LAYERBENCH_SANITIZE)
  target_compile_options(lb_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${LAYERBENCH_SANITIZE} -fno-omit-frame-pointer>)
  target_link_options(lb_options INTERFACE -fsanitize=${LAYERBENCH_SANITIZE})
endif()

# Threads for the bootstrap and the A/B runner.
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
target_link_libraries(lb_options INTERFACE Threads::Threads)
