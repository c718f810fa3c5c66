// The device delay of what-if profiles: one thread spinning on the global nanosecond timer, so
// the delay is wall time whatever the SM clock, and the kernel holds one SM slot only (other
// streams' work runs beside it). A kernel like any other: capturable in a CUDA graph.
#include "collectives/spin_cuda.hpp"

namespace layerbench::cuda {
namespace {

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

}  // namespace

cudaError_t launch_spin(cudaStream_t s, double microseconds) {
  const double ns = microseconds > 0 ? microseconds * 1000.0 : 0.0;
  spin_kernel<<<1, 1, 0, s>>>(static_cast<unsigned long long>(ns));
  return cudaGetLastError();
}

}  // namespace layerbench::cuda
