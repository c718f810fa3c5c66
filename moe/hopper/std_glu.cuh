#pragma once
// The standard block's gated activation on one (gate, up) pair, defined once for the activation
// kernel (moe/standard/std_kernels.cu) and the gate/up epilogue of the Hopper grouped GEMM
// (moe/hopper/std_grouped_sm90.cu), so that every expert path computes the same bits. The inputs are the
// bf16-rounded gate and up values (the cuBLAS paths store gate/up in bf16; the fused epilogue
// rounds its fp32 accumulators the same way first).
//
// SiLU-GLU: silu(g) * u; gpt-oss's clamped SwiGLU: gc * sigmoid(alpha gc) * (uc + 1) with
// gc = min(g, limit), uc = clamp(u, -limit, limit). The sigmoid uses the hardware exponential and
// divide (__expf, __fdividef: a few ulp of fp32, far below the bf16 rounding of the result); for
// g -> -inf the quotient goes to 0, the limit of silu. IEEE expf and division cost about twice as
// many instructions, and in the fused epilogue every one of them leaves the tensor cores idle.
namespace layerbench::moe::cuda {

template <bool CLAMPED>
__device__ __forceinline__ float std_glu_value(float g, float u, float alpha, float limit) {
  if constexpr (!CLAMPED) {
    return __fdividef(g, 1.0f + __expf(-g)) * u;
  } else {
    const float gc = fminf(g, limit), uc = fminf(fmaxf(u, -limit), limit);
    return __fdividef(gc, 1.0f + __expf(-alpha * gc)) * (uc + 1.0f);
  }
}

}  // namespace layerbench::moe::cuda
