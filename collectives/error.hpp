#pragma once
// The one error header. Every CUDA, NCCL, cuBLAS, cuDNN and MPI call goes through a check macro
// that throws layerbench::Error with rank, host, call text and source location. The macros
// expand at the call site, so this header needs none of the CUDA headers; the translation unit
// that uses LB_CUDA_CHECK includes <cuda_runtime.h> itself.
#include "common/usage.hpp"

#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>

namespace layerbench {

// A failure of a library call or a broken invariant: fatal for the job (MPI_Abort).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad user input (common/usage.hpp's UsageError): a clear message and exit code 2 on every rank.

// "rank 3 on host-a" once the process identity is known, "rank ?" before.
std::string rank_tag();
// Set once at start-up by the runtime (MPI world rank and host name).
void set_process_identity(int world_rank, std::string host);

namespace detail {
[[noreturn]] void throw_error(std::string_view library, std::string_view call,
                              std::string_view message,
                              std::source_location loc = std::source_location::current());
std::string mpi_error_string(int code);

// Marks this process as waiting inside an MPI call for the host-wait watchdog
// (collectives/watchdog.hpp), which ends the job when one call waits longer than --timeout.
class MpiWaitScope {
 public:
  explicit MpiWaitScope(const char* call) noexcept;
  ~MpiWaitScope();
  MpiWaitScope(const MpiWaitScope&) = delete;
  MpiWaitScope& operator=(const MpiWaitScope&) = delete;

 private:
  bool owner_ = false;
};
}  // namespace detail

}  // namespace layerbench

#define LB_CHECK(cond, msg)                                                                   \
  do {                                                                                        \
    if (!(cond)) ::layerbench::detail::throw_error("check", #cond, (msg));                    \
  } while (0)

#define LB_MPI_CHECK(call)                                                                    \
  do {                                                                                        \
    const ::layerbench::detail::MpiWaitScope lb_mpi_wait_(#call);                             \
    const int lb_mpi_rc_ = (call);                                                            \
    if (lb_mpi_rc_ != 0 /* MPI_SUCCESS */)                                                    \
      ::layerbench::detail::throw_error("MPI", #call,                                         \
                                        ::layerbench::detail::mpi_error_string(lb_mpi_rc_));  \
  } while (0)

#define LB_CUDA_CHECK(call)                                                                   \
  do {                                                                                        \
    const cudaError_t lb_cuda_rc_ = (call);                                                   \
    if (lb_cuda_rc_ != cudaSuccess)                                                           \
      ::layerbench::detail::throw_error("CUDA", #call, cudaGetErrorString(lb_cuda_rc_));      \
  } while (0)

// Kernel launches: check the launch itself (configuration errors) right after <<<...>>>.
#define LB_CUDA_CHECK_LAUNCH() LB_CUDA_CHECK(cudaGetLastError())

#define LB_NCCL_CHECK(call)                                                                   \
  do {                                                                                        \
    const ncclResult_t lb_nccl_rc_ = (call);                                                  \
    if (lb_nccl_rc_ != ncclSuccess && lb_nccl_rc_ != ncclInProgress)                          \
      ::layerbench::detail::throw_error(                                                      \
          "NCCL", #call,                                                                      \
          std::string(ncclGetErrorString(lb_nccl_rc_)) + ": " + ncclGetLastError(nullptr));   \
  } while (0)

#define LB_CUBLAS_CHECK(call)                                                                 \
  do {                                                                                        \
    const cublasStatus_t lb_cublas_rc_ = (call);                                              \
    if (lb_cublas_rc_ != CUBLAS_STATUS_SUCCESS)                                               \
      ::layerbench::detail::throw_error("cuBLAS", #call, cublasGetStatusString(lb_cublas_rc_)); \
  } while (0)

#define LB_CUDNN_CHECK(call)                                                                  \
  do {                                                                                        \
    const cudnnStatus_t lb_cudnn_rc_ = (call);                                                \
    if (lb_cudnn_rc_ != CUDNN_STATUS_SUCCESS)                                                 \
      ::layerbench::detail::throw_error("cuDNN", #call, cudnnGetErrorString(lb_cudnn_rc_));   \
  } while (0)
