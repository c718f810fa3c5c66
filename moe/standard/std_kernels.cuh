#pragma once
// CUDA kernels of the standard MoE block (moe/standard/std_cuda_ops.cu uses them; the kernel study and
// the GPU tests call them directly).
//   std_route   one warp per token: scores (softmax / sigmoid / the logits themselves), selection
//               bias, group limit (max or top-2-sum group score), top-k with ties to the lower id,
//               weights (selected scores, or softmax / sigmoid of the k selected logits),
//               renormalisation and scale -- moe/config/router.hpp's definition, for any expert count
//               up to kStdRouteMaxExperts and k <= 32, in one kernel over fp32 logits.
//   std_glu     (m, 2I) [gate | up] -> (m, I), SiLU-GLU or clamped SwiGLU, 16-byte accesses
//               when I is a multiple of 8.
#include "moe/config/model.hpp"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace layerbench::moe::cuda {

inline constexpr std::int64_t kStdRouteMaxExperts = 512;
inline constexpr std::int64_t kStdRouteMaxTopk = 32;

// logits fp32 (n, e); bias fp32 (e) (read only with spec.selection_bias); idx int32 (n, k),
// weight fp32 (n, k). Requires e <= kStdRouteMaxExperts and k <= kStdRouteMaxTopk.
void std_route(const float* logits, const float* bias, const RouterSpec& spec, std::int64_t n, std::int64_t e,
               std::int64_t k, std::int32_t* idx, float* weight, cudaStream_t st);

void std_glu(const __nv_bfloat16* in, __nv_bfloat16* out, std::int64_t m, std::int64_t inter,
             const ActivationSpec& a, cudaStream_t st);

}  // namespace layerbench::moe::cuda
