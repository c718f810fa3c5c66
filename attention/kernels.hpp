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
#include <string>

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
//   q, o: [Sq, B, H, D]   k, v: [Skv, B, H, D]
struct AttentionShape {
  long long batch = 1, seq_q = 0, seq_kv = 0;
  int heads = 0, head_dim = 0;
  float scale = 1.0f;
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
  virtual void attention(const void* q, const void* k, const void* v, void* o,
                         const AttentionShape& a, Stream s) = 0;
  // Builds (and caches) whatever `attention` needs for this shape, outside any timed region.
  virtual void prepare(const AttentionShape&) {}
  // Which attention implementation ran, e.g. "cudnn 9.14.0 sdpa_fwd engine 9".
  virtual std::string describe() const = 0;
};

std::unique_ptr<Kernels> make_host_kernels(DType t);
// CUDA backend: copy kernels + cuDNN SDPA (bf16 only). `sdpa_path`: auto | unified |
// composite (the cuDNN graph form). Throws Error without CUDA support.
std::unique_ptr<Kernels> make_cuda_kernels(DType t, const std::string& sdpa_path = "auto");

}  // namespace layerbench::attention
