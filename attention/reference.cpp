#include "attention/reference.hpp"

#include <cstring>

namespace layerbench::attention {

float TensorView::at(long long b, long long s, long long h, long long d) const {
  const long long i = b * stride_b + s * stride_s + h * stride_h + d;
  if (dtype == DType::bf16) return bf16_bits_to_float(static_cast<const std::uint16_t*>(data)[i]);
  return static_cast<const float*>(data)[i];
}

void attention_cpu(const TensorView& q, const TensorView& k, const TensorView& v, void* o,
                   long long o_stride_b, long long o_stride_s, long long o_stride_h,
                   long long batch, long long seq_q, long long seq_kv, int heads, int head_dim,
                   float scale) {
  std::vector<long long> rows(static_cast<std::size_t>(seq_q));
  for (long long r = 0; r < seq_q; ++r) rows[static_cast<std::size_t>(r)] = r;
  const DType t = q.dtype;
  attention_rows(q, k, v, batch, seq_kv, heads, head_dim, scale, rows,
                 [&](long long b, long long r, int h, int d, float value) {
                   const long long i = b * o_stride_b + r * o_stride_s + h * o_stride_h + d;
                   if (t == DType::bf16)
                     static_cast<std::uint16_t*>(o)[i] = float_to_bf16_bits(value);
                   else
                     static_cast<float*>(o)[i] = value;
                 });
}

namespace {
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

float random_value(std::uint64_t seed, int tensor, std::uint64_t index, DType t) {
  const std::uint64_t h =
      splitmix64(splitmix64(seed ^ (static_cast<std::uint64_t>(tensor) << 56)) ^ index);
  // 24 random bits -> [-1, 1) -> unit variance.
  const float u = static_cast<float>(h >> 40) * (2.0f / 16777216.0f) - 1.0f;
  const float x = u * 1.7320508f;
  return t == DType::bf16 ? round_to_bf16(x) : x;
}

}  // namespace layerbench::attention
