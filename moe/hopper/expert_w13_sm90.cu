// K-major, block-interleaved copy of the gate/up weights for the Hopper gate/up kernel
// (moe/hopper/expert_gemm_sm90.cu, whose file comment gives the layout): W13 (E, d, 2I) [gate | up] ->
// W13k (E, 2 Ip, dp), Ip = I rounded up to 64, dp = d rounded up to 64, zero padded; rows
// [128j, 128j + 64) are the gate columns [64j, 64j + 64), rows [128j + 64, 128j + 128) the up ones.
#include "collectives/error.hpp"
#include "moe/hopper/experts_sm90.cuh"

#include <algorithm>
#include <cstdint>

namespace layerbench::moe::cuda {

namespace {

constexpr int BNH = 64, BN = 2 * BNH, BK = 64, KMAX = 256;  // the kernel's column block and k slab

__global__ void prepare_w13_kmajor_kernel(const bf16* __restrict__ w13, bf16* __restrict__ w13k, std::int64_t experts,
                                          int d, int inter) {
  const int dp = (d + BK - 1) / BK * BK, ip = (inter + BNH - 1) / BNH * BNH;
  const std::int64_t n = experts * 2 * ip * dp;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const int k = static_cast<int>(i % dp);
    const std::int64_t row = i / dp;
    const int rr = static_cast<int>(row % (2 * ip));
    const std::int64_t e = row / (2 * ip);
    const int j = rr / BN, q = rr % BN, col = j * BNH + (q % BNH);
    bf16 v = __float2bfloat16_rn(0.0f);
    if (k < d && col < inter) v = w13[(e * d + k) * 2 * inter + (q < BNH ? 0 : inter) + col];
    w13k[i] = v;
  }
}

}  // namespace

std::int64_t w13_kmajor_elems(std::int64_t experts, std::int64_t d, std::int64_t inter) {
  return experts * 2 * ((inter + BNH - 1) / BNH * BNH) * ((d + BK - 1) / BK * BK);
}

void prepare_w13_kmajor(const bf16* w13, bf16* w13k, std::int64_t experts, std::int64_t d, std::int64_t inter,
                        cudaStream_t s) {
  LB_CHECK(d > 0 && d <= KMAX && inter > 0, "W13 K-major copy: 0 < d_head <= 256");
  const std::int64_t n = w13_kmajor_elems(experts, d, inter);
  if (n == 0) return;
  const int blocks = static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 65535LL * 8));
  prepare_w13_kmajor_kernel<<<blocks, 256, 0, s>>>(w13, w13k, experts, static_cast<int>(d), static_cast<int>(inter));
  LB_CUDA_CHECK_LAUNCH();
}

}  // namespace layerbench::moe::cuda
