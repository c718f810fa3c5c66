// The standard block's permutation on the device (moe/standard/std_device_permute.cuh).
#include "collectives/error.hpp"
#include "moe/standard/std_device_permute.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <climits>

namespace layerbench::moe::cuda {

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, 65535));
}

// counts[ids[i]] += 1 (one atomic per distinct id of a warp) and index[i] = i (the sort's values).
__global__ void count_and_index_kernel(const int* __restrict__ ids, int* __restrict__ counts, int* __restrict__ index,
                                       std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const int id = ids[i];
    index[i] = static_cast<int>(i);
    const unsigned same = __match_any_sync(__activemask(), id);
    if ((threadIdx.x & 31) == __ffs(same) - 1) atomicAdd(counts + id, __popc(same));
  }
}

// Position p holds copy order[p] = t k + j: map[p] = t, slot[t k + j] = p.
__global__ void place_kernel(const int* __restrict__ order, int* __restrict__ map, int* __restrict__ slot, int k,
                             std::int64_t n) {
  for (std::int64_t p = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; p < n;
       p += std::int64_t(gridDim.x) * blockDim.x) {
    const int c = order[p];
    map[p] = c / k;
    slot[c] = static_cast<int>(p);
  }
}

}  // namespace

StdDevicePermute::StdDevicePermute(Device& dev, std::int64_t copies, std::int64_t experts)
    : copies_(copies), experts_(experts) {
  LB_CHECK(copies >= 0 && copies < INT_MAX && experts > 0 && experts < INT_MAX,
           "device permutation: copies and experts are 32-bit");
  end_bit_ = 1;
  while (end_bit_ < 31 && (std::int64_t{1} << end_bit_) < experts) ++end_bit_;
  const auto n = static_cast<std::size_t>(std::max<std::int64_t>(copies, 1));
  index_ = dev.alloc(n * 4);
  keys_sorted_ = dev.alloc(n * 4);
  order_ = dev.alloc(n * 4);
  LB_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes_, static_cast<const int*>(nullptr),
                                                static_cast<int*>(nullptr), static_cast<const int*>(nullptr),
                                                static_cast<int*>(nullptr), static_cast<int>(n), 0, end_bit_));
  temp_ = dev.alloc(std::max<std::size_t>(temp_bytes_, 16));
}

void StdDevicePermute::run(const std::int32_t* ids, std::int64_t copies, std::int64_t k, std::int32_t* counts,
                           std::int32_t* slot, std::int32_t* map, cudaStream_t st) {
  LB_CHECK(copies <= copies_ && k > 0, "device permutation: more copies than its workspace holds");
  LB_CUDA_CHECK(cudaMemsetAsync(counts, 0, static_cast<std::size_t>(experts_) * 4, st));
  if (copies == 0) return;
  count_and_index_kernel<<<blocks_for(copies), kThreads, 0, st>>>(ids, counts, index_.as<int>(), copies);
  LB_CUDA_CHECK_LAUNCH();
  std::size_t bytes = temp_bytes_;
  LB_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp_.data(), bytes, ids, keys_sorted_.as<int>(), index_.as<int>(),
                                                order_.as<int>(), static_cast<int>(copies), 0, end_bit_, st));
  place_kernel<<<blocks_for(copies), kThreads, 0, st>>>(order_.as<int>(), map, slot, static_cast<int>(k), copies);
  LB_CUDA_CHECK_LAUNCH();
}

}  // namespace layerbench::moe::cuda
