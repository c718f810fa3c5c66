#pragma once
// Launcher of the device spin kernel (collectives/spin.cu), behind Device::spin.
#include <cuda_runtime.h>

namespace layerbench::cuda {

// Enqueues a one-thread kernel that spins `microseconds` of wall time (global timer) on `s`.
cudaError_t launch_spin(cudaStream_t s, double microseconds);

}  // namespace layerbench::cuda
