#include "attention/verify.hpp"

#include "attention/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace layerbench::attention {

std::vector<unsigned char> make_rows(std::uint64_t seed, int tensor, DType t, long long batch,
                                     long long total_rows, long long row_begin, long long rows,
                                     int heads, int head_dim) {
  const long long row_elems = static_cast<long long>(heads) * head_dim;
  std::vector<unsigned char> out(static_cast<std::size_t>(batch * rows * row_elems) * dtype_size(t));
  auto* f = reinterpret_cast<float*>(out.data());
  auto* h = reinterpret_cast<std::uint16_t*>(out.data());
  for (long long b = 0; b < batch; ++b)
    for (long long r = 0; r < rows; ++r)
      for (long long e = 0; e < row_elems; ++e) {
        const auto global = static_cast<std::uint64_t>((b * total_rows + row_begin + r) * row_elems + e);
        const float x = random_value(seed, tensor, global, t);
        const auto i = static_cast<std::size_t>((b * rows + r) * row_elems + e);
        if (t == DType::bf16)
          h[i] = float_to_bf16_bits(x);
        else
          f[i] = x;
      }
  return out;
}

void fill_inputs(SpAttention& sp, Device& dev, const Problem& p, std::uint64_t seed) {
  const Stream s = dev.compute_stream();
  for (int i = 0; i < 3; ++i) {
    const auto rows = make_rows(seed, i, p.dtype, p.batch, p.seq, sp.shard_offset(), sp.local_seq(),
                                p.heads, p.head_dim);  // [B, Sl, H, D]
    dev.copy_from_host(sp.input(i), rows.data(), rows.size(), s);
    dev.synchronize(s);
  }
  if (p.text_tokens > 0)
    for (int i = 0; i < 3; ++i) {
      const auto rows = make_rows(seed, 3 + i, p.dtype, p.batch, p.text_tokens, 0, p.text_tokens,
                                  p.heads, p.head_dim);  // [B, Lt, H, D]
      dev.copy_from_host(sp.joint_input(i), rows.data(), rows.size(), s);
      dev.synchronize(s);
    }
}

double tolerance(DType t) { return t == DType::bf16 ? 2e-2 : 1e-4; }

namespace {
// [B, Lt + S, H, D] in fp32: joint rows first, then the image sequence (the reference order).
std::vector<float> concat_rows(std::uint64_t seed, int image_id, const Problem& p) {
  const long long rows = p.text_tokens + p.seq, row_elems = static_cast<long long>(p.heads) * p.head_dim;
  std::vector<float> out(static_cast<std::size_t>(p.batch * rows * row_elems));
  for (long long b = 0; b < p.batch; ++b)
    for (long long r = 0; r < rows; ++r) {
      const bool joint = r < p.text_tokens;
      const long long gr = joint ? r : r - p.text_tokens;
      const long long total = joint ? p.text_tokens : p.seq;
      for (long long e = 0; e < row_elems; ++e)
        out[static_cast<std::size_t>((b * rows + r) * row_elems + e)] = random_value(
            seed, joint ? image_id + 3 : image_id,
            static_cast<std::uint64_t>((b * total + gr) * row_elems + e), p.dtype);
    }
  return out;
}
}  // namespace

CheckResult check_outputs(const SpAttention& sp, Device& dev, const Problem& p,
                          std::uint64_t seed, double budget) {
  const long long lt = p.text_tokens, sl = sp.local_seq(), skv = lt + p.seq;
  const long long row_elems = static_cast<long long>(p.heads) * p.head_dim;
  // Query rows in the concatenated [joint; image] order: all joint rows, then this shard.
  std::vector<long long> rows;
  CheckResult res;
  const double full_cost = static_cast<double>(p.batch) * (lt + sl) * skv * row_elems;
  if (full_cost <= budget) {
    for (long long r = 0; r < lt; ++r) rows.push_back(r);
    for (long long r = 0; r < sl; ++r) rows.push_back(lt + sp.shard_offset() + r);
  } else {
    res.all_rows = false;
    const long long per_row = p.batch * skv * row_elems;
    const long long n = std::min<long long>(
        sl, std::max<long long>(16, static_cast<long long>(budget / static_cast<double>(per_row))));
    const long long m = std::min(lt, 4LL);  // a few joint rows, first and last included
    for (long long i = 0; i < m; ++i) rows.push_back(m == 1 ? 0 : i * (lt - 1) / (m - 1));
    for (long long i = 0; i < n; ++i) rows.push_back(lt + sp.shard_offset() + i * (sl - 1) / (n - 1));
  }
  res.rows_checked = static_cast<long long>(rows.size());

  const auto q = concat_rows(seed, 0, p), k = concat_rows(seed, 1, p), v = concat_rows(seed, 2, p);
  const long long sb = skv * row_elems, ss = row_elems, sh = p.head_dim;
  const TensorView qv{q.data(), DType::fp32, sb, ss, sh}, kv{k.data(), DType::fp32, sb, ss, sh},
      vv{v.data(), DType::fp32, sb, ss, sh};

  // Outputs as produced: image [B, Sl, H, D], joint [B, Lt, H, D].
  const std::size_t e = dtype_size(p.dtype);
  auto to_float = [&](const void* src, long long n_rows) {
    const auto n = static_cast<std::size_t>(p.batch * n_rows * row_elems);
    const auto bytes = dev.download<unsigned char>(src, n * e);
    std::vector<float> f(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (p.dtype == DType::bf16) {
        std::uint16_t b;
        std::memcpy(&b, bytes.data() + i * 2, 2);
        f[i] = bf16_bits_to_float(b);
      } else {
        std::memcpy(&f[i], bytes.data() + i * 4, 4);
      }
    }
    return f;
  };
  const auto out = to_float(sp.output(), sl);
  const auto joint_out = lt > 0 ? to_float(sp.joint_output(), lt) : std::vector<float>{};

  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.head_dim)));
  double err = 0, ref_max = 0;
  attention_rows(qv, kv, vv, p.batch, skv, p.heads, p.head_dim, scale, rows,
                 [&](long long b, long long i, int h, int d, float ref) {
                   const long long r = rows[static_cast<std::size_t>(i)];
                   const float got =
                       r < lt ? joint_out[static_cast<std::size_t>(((b * lt + r) * p.heads + h) * p.head_dim + d)]
                              : out[static_cast<std::size_t>(((b * sl + (r - lt - sp.shard_offset())) * p.heads + h) *
                                                                 p.head_dim + d)];
                   const double diff = std::fabs(static_cast<double>(got) - ref);
                   err = std::isnan(diff) ? INFINITY : std::max(err, diff);
                   ref_max = std::max(ref_max, std::fabs(static_cast<double>(ref)));
                 });
  res.max_abs_err = err;
  res.max_abs_ref = ref_max;
  return res;
}

}  // namespace layerbench::attention
