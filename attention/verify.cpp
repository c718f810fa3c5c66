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
  auto put = [&](void* dst, int tensor, long long total, long long begin, long long rows, int heads) {
    const auto bytes = make_rows(seed, tensor, p.dtype, p.batch, total, begin, rows, heads, p.head_dim);
    dev.copy_from_host(dst, bytes.data(), bytes.size(), s);
    dev.synchronize(s);
  };
  for (int i = 0; i < 3; ++i)  // [B, Sl, H|Hkv, D]
    put(sp.input(i), i, p.seq, sp.shard_offset(), sp.local_seq(), i == 0 ? p.heads : p.kv());
  if (p.text_tokens > 0)
    for (int i = 0; i < 3; ++i) put(sp.joint_input(i), 3 + i, p.text_tokens, 0, p.text_tokens, i == 0 ? p.heads : p.kv());
  if (p.cached_kv > 0)
    for (int i = 0; i < 2; ++i) put(sp.cached_input(i), 6 + i, p.cached_kv, 0, p.cached_kv, p.kv());
}

double tolerance(DType t) { return t == DType::bf16 ? 2e-2 : 1e-4; }

namespace {

// The single-rank problem's keys in its reference order ([cached; joint; image] front,
// [cached; image; joint] rear), fp32, with what each key is.
struct GlobalKeys {
  std::vector<float> k, v;                 // [B, Lk, Hkv, D]
  std::vector<RowKind> kind;               // [Lk]
  std::vector<long long> index;            // [Lk] row within its kind
  long long rows = 0;
};

GlobalKeys global_keys(std::uint64_t seed, const Problem& p) {
  GlobalKeys g;
  struct Part {
    RowKind kind;
    long long rows;
    int k_id;
  };
  std::vector<Part> parts;
  if (p.cached_kv > 0) parts.push_back({RowKind::cached, p.cached_kv, 6});
  const Part joint{RowKind::joint, p.text_tokens, 4}, image{RowKind::image, p.seq, 1};
  if (p.joint == JointPosition::front) {
    parts.push_back(joint);
    parts.push_back(image);
  } else {
    parts.push_back(image);
    parts.push_back(joint);
  }
  for (const auto& pt : parts)
    for (long long r = 0; r < pt.rows; ++r) {
      g.kind.push_back(pt.kind);
      g.index.push_back(r);
    }
  g.rows = static_cast<long long>(g.kind.size());
  const long long re = static_cast<long long>(p.kv()) * p.head_dim;
  g.k.resize(static_cast<std::size_t>(p.batch * g.rows * re));
  g.v.resize(g.k.size());
  for (long long b = 0; b < p.batch; ++b) {
    long long row = 0;
    for (const auto& pt : parts)
      for (long long r = 0; r < pt.rows; ++r, ++row)
        for (long long e = 0; e < re; ++e) {
          const auto src = static_cast<std::uint64_t>((b * pt.rows + r) * re + e);
          const auto dst = static_cast<std::size_t>((b * g.rows + row) * re + e);
          g.k[dst] = random_value(seed, pt.k_id, src, p.dtype);
          g.v[dst] = random_value(seed, pt.k_id + 1, src, p.dtype);
        }
  }
  return g;
}

bool key_valid(const Problem& p, const GlobalKeys& g, long long b, long long j, int query_doc) {
  switch (g.kind[static_cast<std::size_t>(j)]) {
    case RowKind::cached: return true;
    case RowKind::joint: return g.index[static_cast<std::size_t>(j)] < p.joint_valid_of(b);
    case RowKind::image: {
      const long long i = g.index[static_cast<std::size_t>(j)];
      return i < p.image_valid_of(b) && (query_doc < 0 || p.document_of(i) == query_doc);
    }
  }
  return false;
}

}  // namespace

CheckResult check_outputs(const SpAttention& sp, Device& dev, const Problem& p,
                          std::uint64_t seed, double budget) {
  const long long lt = p.text_tokens, sl = sp.local_seq();
  const long long kv_re = static_cast<long long>(p.kv()) * p.head_dim;
  const int group = p.heads / p.kv();
  const GlobalKeys g = global_keys(seed, p);
  // Query rows: (joint?, index). All of them when affordable, else a spread sample.
  struct QueryRow {
    bool joint;
    long long index;
  };
  std::vector<QueryRow> rows;
  CheckResult res;
  const double full_cost = static_cast<double>(p.batch) * (lt + sl) * g.rows * p.heads * p.head_dim;
  if (full_cost <= budget) {
    for (long long r = 0; r < lt; ++r) rows.push_back({true, r});
    for (long long r = 0; r < sl; ++r) rows.push_back({false, sp.shard_offset() + r});
  } else {
    res.all_rows = false;
    const double per_row = static_cast<double>(p.batch) * g.rows * p.heads * p.head_dim;
    const long long n = std::min<long long>(sl, std::max<long long>(16, static_cast<long long>(budget / per_row)));
    const long long m = std::min(lt, 4LL);  // a few joint rows, first and last included
    for (long long i = 0; i < m; ++i) rows.push_back({true, m == 1 ? 0 : i * (lt - 1) / (m - 1)});
    for (long long i = 0; i < n; ++i) rows.push_back({false, sp.shard_offset() + (n == 1 ? 0 : i * (sl - 1) / (n - 1))});
  }
  res.rows_checked = static_cast<long long>(rows.size());

  // Outputs as produced: image [B, Sl, H, D], joint [B, Lt, H, D].
  const std::size_t e = dtype_size(p.dtype);
  const long long q_re = static_cast<long long>(p.heads) * p.head_dim;
  auto to_float = [&](const void* src, long long n_rows) {
    const auto n = static_cast<std::size_t>(p.batch * n_rows * q_re);
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

  const double scale = 1.0 / std::sqrt(static_cast<double>(p.head_dim));
  double err = 0, ref_max = 0;
  std::vector<double> w(static_cast<std::size_t>(g.rows)), acc(static_cast<std::size_t>(p.head_dim));
  std::vector<float> q(static_cast<std::size_t>(p.head_dim));
  for (long long b = 0; b < p.batch; ++b)
    for (const auto& qr : rows) {
      const int doc = (!qr.joint && p.packed()) ? p.document_of(qr.index) : -1;
      const long long total = qr.joint ? lt : p.seq;
      for (int h = 0; h < p.heads; ++h) {
        for (int d = 0; d < p.head_dim; ++d)
          q[static_cast<std::size_t>(d)] = random_value(
              seed, qr.joint ? 3 : 0, static_cast<std::uint64_t>((b * total + qr.index) * q_re + h * p.head_dim + d), p.dtype);
        const long long kh = h / group;
        double m = -INFINITY;
        for (long long j = 0; j < g.rows; ++j) {
          w[static_cast<std::size_t>(j)] = -INFINITY;
          if (!key_valid(p, g, b, j, doc)) continue;
          const float* kr = &g.k[static_cast<std::size_t>((b * g.rows + j) * kv_re + kh * p.head_dim)];
          double dot = 0;
          for (int d = 0; d < p.head_dim; ++d) dot += static_cast<double>(q[static_cast<std::size_t>(d)]) * kr[d];
          w[static_cast<std::size_t>(j)] = dot * scale;
          m = std::max(m, dot * scale);
        }
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (long long j = 0; j < g.rows; ++j) {
          if (w[static_cast<std::size_t>(j)] == -INFINITY) continue;
          const double pj = std::exp(w[static_cast<std::size_t>(j)] - m);
          sum += pj;
          const float* vr = &g.v[static_cast<std::size_t>((b * g.rows + j) * kv_re + kh * p.head_dim)];
          for (int d = 0; d < p.head_dim; ++d) acc[static_cast<std::size_t>(d)] += pj * vr[d];
        }
        for (int d = 0; d < p.head_dim; ++d) {
          const double ref = acc[static_cast<std::size_t>(d)] / sum;
          const float got = qr.joint ? joint_out[static_cast<std::size_t>(((b * lt + qr.index) * p.heads + h) * p.head_dim + d)]
                                     : out[static_cast<std::size_t>(((b * sl + (qr.index - sp.shard_offset())) * p.heads + h) *
                                                                        p.head_dim + d)];
          const double diff = std::fabs(static_cast<double>(got) - ref);
          err = std::isnan(diff) ? INFINITY : std::max(err, diff);
          ref_max = std::max(ref_max, std::fabs(ref));
        }
      }
    }
  res.max_abs_err = err;
  res.max_abs_ref = ref_max;
  return res;
}

}  // namespace layerbench::attention
