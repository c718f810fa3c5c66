#include "common/cli/version.hpp"

#include <fmt/format.h>
// Macros only (the MPI version this binary was compiled against): no MPI symbol is referenced,
// and the C++ bindings, which would be, are skipped.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#ifdef LAYERBENCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <cudnn_version.h>
#include <nccl.h>
#endif

#ifndef LAYERBENCH_GIT_SHA
#define LAYERBENCH_GIT_SHA "unknown"
#endif
#ifndef LAYERBENCH_VERSION
#define LAYERBENCH_VERSION "unknown"
#endif

namespace layerbench::cli {
namespace {

std::string mpi_text() {
#if defined(OMPI_MAJOR_VERSION)
  std::string lib = fmt::format("Open MPI {}.{}.{}", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
  std::string lib = fmt::format("MPICH {}", MPICH_VERSION);
#else
  std::string lib = "MPI";
#endif
  return fmt::format("{} (MPI {}.{})", lib, MPI_VERSION, MPI_SUBVERSION);
}

BuildInfo make_info() {
  BuildInfo b;
  b.version = LAYERBENCH_VERSION;
  b.git_sha = LAYERBENCH_GIT_SHA;
  b.mpi = mpi_text();
#ifdef LAYERBENCH_HAVE_CUDA
  b.cuda = fmt::format("{}.{}", CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
  b.nccl = fmt::format("{}.{}.{}", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  b.cudnn = fmt::format("{}.{}.{}", CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);
#else
  b.cuda = b.nccl = b.cudnn = "none";
#endif
  return b;
}

}  // namespace

const BuildInfo& build_info() {
  static const BuildInfo info = make_info();
  return info;
}

std::string version_text(std::string_view program) {
  const auto& b = build_info();
  return fmt::format("{} {} (git {})\nbuilt with: CUDA {}, NCCL {}, cuDNN {}, {}", program, b.version, b.git_sha,
                     b.cuda, b.nccl, b.cudnn, b.mpi);
}

}  // namespace layerbench::cli
