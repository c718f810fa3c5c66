#pragma once
// CPU attention: fp32 inputs, fp64 accumulation, exact softmax. The host backend's attention
// and the correctness oracle of every backend.
#include "collectives/types.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace layerbench::attention {

// A 3-D view [B, S, H, D] of typed memory (bf16 bits or fp32) with D contiguous; strides in
// elements for b, s and h.
struct TensorView {
  const void* data = nullptr;
  DType dtype = DType::fp32;
  long long stride_b = 0, stride_s = 0, stride_h = 0;
  float at(long long b, long long s, long long h, long long d) const;
};

// o[b, r, h, :] = softmax(scale * q[b, r, h, :] . k[b, :, h, :]) v[b, :, h, :] for the query
// rows `rows` (all rows when empty); written through `store(b, row_index, h, d, value)`.
// q: [B, *, H, D]  k, v: [B, Skv, H, D]
template <class Store>
void attention_rows(const TensorView& q, const TensorView& k, const TensorView& v, long long batch,
                    long long seq_kv, int heads, int head_dim, float scale,
                    std::span<const long long> rows, Store&& store);

// Writes o (same dtype and strides rules as the views; [B, Sq, H, D] through `o`).
void attention_cpu(const TensorView& q, const TensorView& k, const TensorView& v, void* o,
                   long long o_stride_b, long long o_stride_s, long long o_stride_h,
                   long long batch, long long seq_q, long long seq_kv, int heads, int head_dim,
                   float scale);

// Deterministic inputs: element `index` of tensor `tensor` under `seed`, unit variance,
// uniform in [-sqrt(3), sqrt(3)), already rounded to bf16 when dtype is bf16. Any rank can
// regenerate any slice of the global tensor, so shards and the oracle agree without traffic.
float random_value(std::uint64_t seed, int tensor, std::uint64_t index, DType t);

}  // namespace layerbench::attention

#include "attention/reference_impl.hpp"
