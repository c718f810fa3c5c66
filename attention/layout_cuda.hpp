#pragma once
// CUDA copy kernels behind Kernels::pack_heads / unpack_heads (see kernels.hpp for layouts).
#include "attention/kernels.hpp"

#include <cuda_runtime.h>

namespace layerbench::attention::detail {

void launch_pack_heads(const void* x, void* dst, const SliceShape& p, int first, int n,
                       std::size_t elem_bytes, cudaStream_t s);
void launch_unpack_heads(const void* src, void* out, const SliceShape& p, int n,
                         std::size_t elem_bytes, cudaStream_t s);

}  // namespace layerbench::attention::detail
