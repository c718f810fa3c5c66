#pragma once
// CUDA copy kernels behind Kernels::pack_heads / unpack_heads (see kernels.hpp for layouts).
#include "attention/kernels.hpp"

#include <cuda_runtime.h>

namespace layerbench::attention::detail {

void launch_pack_heads(const void* x, void* dst, const SliceShape& p, int first, int n,
                       std::size_t elem_bytes, cudaStream_t s);
void launch_unpack_heads(const void* src, void* out, const SliceShape& p, int n,
                         std::size_t elem_bytes, cudaStream_t s);

// LSE merge of every partial (kernels.hpp Partial; bf16 partials and output). `table`: the
// partials in device memory.
void launch_merge(const void* parts, const float* lse, const Partial* table, int n_parts, void* o,
                  const MergeShape& m, cudaStream_t s);

}  // namespace layerbench::attention::detail
