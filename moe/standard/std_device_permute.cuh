#pragma once
// The standard block's permutation on the device (its EP 1 device path, moe/standard/std_block_device.cpp):
// the routed copies (token t, choice j) of the top-k ids grouped by expert, token order inside --
// exactly the order the host path (StdBlock::dispatch_permute) plans -- and the per-expert
// counts, with nothing read back to the host, so the layer can be captured in a CUDA graph.
//   counts  int32 (experts)  a histogram of the ids
//   order   the copy indices t k + j stably sorted by expert (cub's radix sort over the id's bits:
//           per digit a histogram, an exclusive scan and a stable scatter -- a counting sort)
//   map     int32 (copies)   expert-major position p -> token of its copy
//   slot    int32 (n, k)     copy (t, j) -> its position p
#include "collectives/device.hpp"

#include <cuda_runtime.h>

#include <cstdint>

namespace layerbench::moe::cuda {

class StdDevicePermute {
 public:
  // Workspaces for `copies` copies over `experts` experts (allocates: call outside a capture).
  StdDevicePermute(Device& dev, std::int64_t copies, std::int64_t experts);
  std::int64_t copies() const { return copies_; }
  std::int64_t experts() const { return experts_; }
  // ids int32 (copies = n k) in [0, experts); at most copies() copies, exactly experts() experts.
  void run(const std::int32_t* ids, std::int64_t copies, std::int64_t k, std::int32_t* counts, std::int32_t* slot,
           std::int32_t* map, cudaStream_t st);

 private:
  std::int64_t copies_, experts_;
  int end_bit_;
  Buffer index_, keys_sorted_, order_, temp_;
  std::size_t temp_bytes_ = 0;
};

}  // namespace layerbench::moe::cuda
