#pragma once
// CUDA copy kernels behind Kernels::pack_heads / unpack_heads (see kernels.hpp for layouts).
#include "attention/kernels.hpp"

#include <cuda_runtime.h>

namespace layerbench::attention::detail {

void launch_pack_heads(const void* x, void* dst, const SliceShape& p, int first, int n,
                       std::size_t elem_bytes, cudaStream_t s);
void launch_unpack_heads(const void* src, void* out, const SliceShape& p, int n,
                         std::size_t elem_bytes, cudaStream_t s);

// LSE merge of partial outputs (bf16 partials, fp32 accumulators; kernels.hpp MergeShape).
void launch_merge_init(float* acc_o, float* acc_lse, long long n_lse, int head_dim, cudaStream_t s);
void launch_merge(const void* part_o, const float* part_lse, float* acc_o, float* acc_lse, const MergeShape& m,
                  cudaStream_t s);
void launch_merge_finish(const float* acc_o, void* o, long long n, cudaStream_t s);

}  // namespace layerbench::attention::detail
