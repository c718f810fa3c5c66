#pragma once
// Counter-based seeded values: element i of tensor `tensor` is a pure function of
// (seed, tensor, i), so every rank can build exactly its own slice of a weight (and the
// single-rank oracle the whole tensor) without generating or moving the rest. Shared by the
// host path and the CUDA fill kernel, hence the host/device annotations.
#include <cstdint>

#if defined(__CUDACC__)
#define LB_MOE_HD __host__ __device__ inline
#else
#define LB_MOE_HD inline
#endif

namespace layerbench::moe {

// Tensor ids: one per logical tensor of the layer (the layer index is mixed into the seed).
enum TensorId : std::uint32_t {
  kInput = 1,
  kNormWeight,
  kSplit,
  kMerge,
  kRouterGate,
  kExpertBias,
  kExpertGate,
  kExpertUp,
  kExpertDown,
  kSharedFc1,
  kSharedFc2,
  kModalityFc1,
  kModalityFc2,
  kDenseA,
  kDenseB,
};

// A [rows, cols] slice, at (row0, col0), of the logical [*, full_cols] seeded tensor `tensor`,
// stored with leading dimension ld: dst[r * ld + c] = seeded_value(seed, tensor,
// (row0 + r) * full_cols + col0 + c, scale).
struct SeededSlice {
  std::uint64_t seed = 0;
  std::uint32_t tensor = 0;
  float scale = 1.0f;
  std::int64_t rows = 0, cols = 0, full_cols = 0, row0 = 0, col0 = 0, ld = 0;
};

LB_MOE_HD std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [-scale, scale): 24 random bits, exact in fp32 on host and device alike.
LB_MOE_HD float seeded_value(std::uint64_t seed, std::uint32_t tensor, std::uint64_t index,
                             float scale) {
  const std::uint64_t h = splitmix64(splitmix64(seed ^ (std::uint64_t{tensor} << 48)) + index);
  const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);  // [0, 1)
  return (2.0f * u - 1.0f) * scale;
}

}  // namespace layerbench::moe
