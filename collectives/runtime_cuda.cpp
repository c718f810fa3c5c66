// Versions of the CUDA-side libraries, read at run time (what actually got loaded).
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>
#include <nlohmann/json.hpp>

#include <string>

namespace layerbench {

namespace {
std::string dotted(int v, int major_div, int minor_div, int minor_mod) {
  return std::to_string(v / major_div) + "." + std::to_string((v / minor_div) % minor_mod) + "." +
         std::to_string(v % minor_div);
}
}  // namespace

nlohmann::json cuda_versions() {
  nlohmann::json j;
  int rt = 0, drv = 0, nccl = 0;
  if (cudaRuntimeGetVersion(&rt) == cudaSuccess) j["cuda_runtime"] = dotted(rt, 1000, 10, 100);
  // Without a driver (a CUDA build on a CPU-only machine) the call succeeds with 0: record nothing
  // rather than a version "0.0.0" that never existed.
  if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0) j["cuda_driver"] = dotted(drv, 1000, 10, 100);
  if (ncclGetVersion(&nccl) == ncclSuccess) j["nccl"] = dotted(nccl, 10000, 100, 100);
  j["cudnn"] = dotted(static_cast<int>(cudnnGetVersion()), 10000, 100, 100);
  return j;
}

}  // namespace layerbench
