#pragma once
// The local (non-communicating) work of sequence-parallel attention behind one interface: the
// host backend runs plain loops and the CPU reference attention, the CUDA backend runs copy
// kernels and cuDNN's fused SDPA. Layouts: activations enter and leave as [B, S, H, D]
// (BSHD); everything between the collectives is sequence-major [S, B, H, D], so that
// all-to-all chunks and all-gather parts are contiguous runs of whole tokens and the gathered
// K/V comes out in sequence order with no reordering copy.
#include "collectives/device.hpp"
#include "collectives/types.hpp"

#include <memory>
#include <compare>
#include <string>
#include <vector>

namespace layerbench::attention {

// Head-slice geometry of a pack/unpack: `heads` real heads, split into slices of
// `slice_heads` heads; heads at index >= `heads` are the zero padding.
struct SliceShape {
  long long batch = 1;  // B
  long long seq = 0;    // S (rows of this tensor)
  int heads = 0;        // H (real)
  int head_dim = 0;     // D
  int slice_heads = 0;  // Hl = Hpad / U
};

// Local-Q / global-KV attention, non-causal, all tensors sequence-major with D contiguous:
//   q, o: [Sq, B, H, D]   k, v: [Skv, B, Hkv, D]
// GQA: query head h reads K/V head h / (H / Hkv). A view of one request of a larger batch sets
// batch 1 and the row strides of the full tensors (q_row = B*H*D, kv_row = B*Hkv*D).
struct AttentionShape {
  long long batch = 1, seq_q = 0, seq_kv = 0;
  int heads = 0, head_dim = 0;
  float scale = 1.0f;
  int kv_heads = 0;                  // 0 = heads
  long long q_row = 0, kv_row = 0;   // elements between sequence rows; 0 = packed
  int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  long long q_stride() const { return q_row > 0 ? q_row : batch * heads * head_dim; }
  long long kv_stride() const { return kv_row > 0 ? kv_row : batch * kv() * head_dim; }
};

// Merging partial attention outputs by their log-sum-exp (Ring steps, key segments of a mask),
// once, after every partial is written. A partial covers rows [q0, q0 + nq) of one request
// (`request` >= 0) or of all; its output sits in slot `slot` of the partial buffer, each slot laid
// out like the output [rows, B, H, D] (run dtype); its LSE is fp32 [Bc, H, nq] (Bc = 1 for one
// request, else B) starting at lse + lse_off * H.
struct Partial {
  long long q0 = 0, nq = 0, request = -1, lse_off = 0;
  int slot = 0;
  auto operator<=>(const Partial&) const = default;
};
struct MergeShape {
  long long rows = 0, batch = 1;
  int heads = 0, head_dim = 0;
};

class Kernels {
 public:
  virtual ~Kernels() = default;
  // x [B, S, H, D] -> dst [n, S, B, Hl, D]; dst slice j holds heads (first+j)*Hl ...
  // (first+j+1)*Hl - 1, zero for heads >= H (the UAA padding).
  virtual void pack_heads(const void* x, void* dst, const SliceShape& p, int first, int n,
                          Stream s) = 0;
  // src [n, S, B, Hl, D] -> out [B, S, H, D]: the inverse, padded heads dropped (n*Hl >= H).
  virtual void unpack_heads(const void* src, void* out, const SliceShape& p, int n, Stream s) = 0;
  // `lse` (nullable): fp32 [B, H, Sq], the natural-log sum of exp of the scaled scores.
  virtual void attention(const void* q, const void* k, const void* v, void* o,
                         const AttentionShape& a, Stream s, float* lse) = 0;
  void attention(const void* q, const void* k, const void* v, void* o, const AttentionShape& a, Stream s) {
    attention(q, k, v, o, a, s, nullptr);
  }
  // o (run dtype) = for every (row, request, head) the LSE-weighted mean of the partials that
  // cover it (every row is covered by at least one). One pass over the partials.
  virtual void merge(const void* parts, const float* lse, const std::vector<Partial>& partials, void* o,
                     const MergeShape& m, Stream s) = 0;
  // Builds (and caches) whatever `attention` needs for this shape, outside any timed region.
  virtual void prepare(const AttentionShape&, bool /*with_lse*/ = false) {}
  // Which attention implementation ran, e.g. "cudnn 9.14.0 sdpa_fwd engine 9".
  virtual std::string describe() const = 0;
};

std::unique_ptr<Kernels> make_host_kernels(DType t);
// CUDA backend: copy kernels + cuDNN SDPA (bf16 only). `sdpa_path`: auto | unified |
// composite (the cuDNN graph form). Throws Error without CUDA support.
std::unique_ptr<Kernels> make_cuda_kernels(DType t, const std::string& sdpa_path = "auto");

}  // namespace layerbench::attention
