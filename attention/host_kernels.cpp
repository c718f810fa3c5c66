// Host backend: pack/unpack as row copies (one D-vector at a time), attention by the CPU
// reference. Synchronous, so the Stream is ignored.
#include "attention/kernels.hpp"
#include "attention/reference.hpp"
#include "collectives/error.hpp"

#include <fmt/format.h>

#include <cstring>

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

  void attention(const void* q, const void* k, const void* v, void* o, const AttentionShape& a,
                 Stream) override {
    // Sequence-major [S, B, H, D]: stride_s = B*H*D, stride_b = H*D, stride_h = D.
    const long long sh = a.head_dim, sb = static_cast<long long>(a.heads) * a.head_dim,
                    ss = a.batch * sb;
    const TensorView qv{q, dtype_, sb, ss, sh}, kv{k, dtype_, sb, ss, sh}, vv{v, dtype_, sb, ss, sh};
    attention_cpu(qv, kv, vv, o, sb, ss, sh, a.batch, a.seq_q, a.seq_kv, a.heads, a.head_dim,
                  a.scale);
  }

  std::string describe() const override {
    return fmt::format("cpu reference ({} in, fp64 accumulation)", to_string(dtype_));
  }

 private:
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
