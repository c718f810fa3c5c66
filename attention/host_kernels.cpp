// Host backend: pack/unpack as row copies (one D-vector at a time), attention with fp64
// accumulation (strided views, GQA, optional LSE) and the LSE merge. Synchronous, so the Stream
// is ignored.
#include "attention/kernels.hpp"
#include "collectives/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace layerbench::attention {
namespace {

class HostKernels final : public Kernels {
 public:
  explicit HostKernels(DType t) : dtype_(t), elem_(dtype_size(t)) {}

  void pack_heads(const void* x, void* dst, const SliceShape& p, int first, int n,
                  Stream) override {
    const auto* src = static_cast<const unsigned char*>(x);  // [B, S, H, D]
    auto* out = static_cast<unsigned char*>(dst);            // [n, S, B, Hl, D]
    const std::size_t row = static_cast<std::size_t>(p.head_dim) * elem_;
    for (int j = 0; j < n; ++j)
      for (long long s = 0; s < p.seq; ++s)
        for (long long b = 0; b < p.batch; ++b)
          for (int hl = 0; hl < p.slice_heads; ++hl) {
            const long long h = static_cast<long long>(first + j) * p.slice_heads + hl;
            const long long o = ((j * p.seq + s) * p.batch + b) * p.slice_heads + hl;
            if (h < p.heads) {
              const long long i = (b * p.seq + s) * p.heads + h;
              std::memcpy(out + o * row, src + i * row, row);
            } else {
              std::memset(out + o * row, 0, row);  // UAA zero head
            }
          }
  }

  void unpack_heads(const void* src, void* out, const SliceShape& p, int n, Stream) override {
    const auto* in = static_cast<const unsigned char*>(src);  // [n, S, B, Hl, D]
    auto* dst = static_cast<unsigned char*>(out);             // [B, S, H, D]
    const std::size_t row = static_cast<std::size_t>(p.head_dim) * elem_;
    LB_CHECK(static_cast<long long>(n) * p.slice_heads >= p.heads, "unpack: too few slices");
    for (long long b = 0; b < p.batch; ++b)
      for (long long s = 0; s < p.seq; ++s)
        for (int h = 0; h < p.heads; ++h) {
          const int j = h / p.slice_heads, hl = h % p.slice_heads;
          const long long i = ((j * p.seq + s) * p.batch + b) * p.slice_heads + hl;
          std::memcpy(dst + ((b * p.seq + s) * p.heads + h) * row, in + i * row, row);
        }
  }

  void attention(const void* q, const void* k, const void* v, void* o, const AttentionShape& a, Stream,
                 float* lse) override {
    // Sequence-major with row strides; one query row of one head at a time, fp64 accumulation.
    const long long qs = a.q_stride(), ks = a.kv_stride(), D = a.head_dim;
    const int group = a.heads / a.kv();
    std::vector<double> scores(static_cast<std::size_t>(a.seq_kv)), acc(static_cast<std::size_t>(D));
    for (long long b = 0; b < a.batch; ++b)
      for (long long r = 0; r < a.seq_q; ++r)
        for (int h = 0; h < a.heads; ++h) {
          const long long qi = r * qs + (b * a.heads + h) * D;
          const long long kh = b * a.kv() + h / group;
          double m = -INFINITY;
          for (long long j = 0; j < a.seq_kv; ++j) {
            double dot = 0;
            for (long long d = 0; d < D; ++d) dot += static_cast<double>(load(q, qi + d)) * load(k, j * ks + kh * D + d);
            scores[static_cast<std::size_t>(j)] = dot * a.scale;
            m = std::max(m, scores[static_cast<std::size_t>(j)]);
          }
          double sum = 0;
          std::fill(acc.begin(), acc.end(), 0.0);
          for (long long j = 0; j < a.seq_kv; ++j) {
            const double p = std::exp(scores[static_cast<std::size_t>(j)] - m);
            sum += p;
            for (long long d = 0; d < D; ++d) acc[static_cast<std::size_t>(d)] += p * load(v, j * ks + kh * D + d);
          }
          for (long long d = 0; d < D; ++d) store(o, qi + d, static_cast<float>(acc[static_cast<std::size_t>(d)] / sum));
          if (lse) lse[(b * a.heads + h) * a.seq_q + r] = static_cast<float>(m + std::log(sum));
        }
  }

  void merge(const void* parts, const float* lse, const std::vector<Partial>& partials, void* o, const MergeShape& m,
             Stream) override {
    const long long slot = m.rows * m.batch * m.heads * m.head_dim;
    std::vector<double> acc(static_cast<std::size_t>(m.head_dim));
    for (long long r = 0; r < m.rows; ++r)
      for (long long b = 0; b < m.batch; ++b)
        for (int h = 0; h < m.heads; ++h) {
          const long long row = (r * m.batch + b) * m.heads + h;
          double mx = -INFINITY, sum = 0;
          std::fill(acc.begin(), acc.end(), 0.0);
          for (const auto& p : partials) {  // online: rescale when a larger LSE arrives
            if ((p.request >= 0 && p.request != b) || r < p.q0 || r >= p.q0 + p.nq) continue;
            const long long bi = p.request < 0 ? b : 0;
            const double l = lse[p.lse_off * m.heads + (bi * m.heads + h) * p.nq + (r - p.q0)];
            if (l > mx) {
              const double c = std::exp(mx - l);
              sum *= c;
              for (auto& a : acc) a *= c;
              mx = l;
            }
            const double w = std::exp(l - mx);
            sum += w;
            for (long long d = 0; d < m.head_dim; ++d)
              acc[static_cast<std::size_t>(d)] += w * load(parts, p.slot * slot + row * m.head_dim + d);
          }
          LB_CHECK(sum > 0, "LSE merge: a row no partial covers");
          for (long long d = 0; d < m.head_dim; ++d)
            store(o, row * m.head_dim + d, static_cast<float>(acc[static_cast<std::size_t>(d)] / sum));
        }
  }

  std::string describe() const override {
    return fmt::format("cpu reference ({} in, fp64 accumulation)", to_string(dtype_));
  }

 private:
  float load(const void* p, long long i) const {
    return dtype_ == DType::bf16 ? bf16_bits_to_float(static_cast<const std::uint16_t*>(p)[i])
                                 : static_cast<const float*>(p)[i];
  }
  void store(void* p, long long i, float x) const {
    if (dtype_ == DType::bf16)
      static_cast<std::uint16_t*>(p)[i] = float_to_bf16_bits(x);
    else
      static_cast<float*>(p)[i] = x;
  }

  DType dtype_;
  std::size_t elem_;
};

}  // namespace

std::unique_ptr<Kernels> make_host_kernels(DType t) { return std::make_unique<HostKernels>(t); }

#if !defined(LAYERBENCH_HAVE_CUDA)
std::unique_ptr<Kernels> make_cuda_kernels(DType, const std::string&) {
  throw Error("layerbench was built without CUDA: no cuDNN attention");
}
#endif

}  // namespace layerbench::attention
