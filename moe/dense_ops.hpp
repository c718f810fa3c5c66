#pragma once
// The dense primitives both MoE families share: seeded fills, nn.Linear GEMMs and element-wise
// adds on the backend's activation type, with a host implementation (fp32 loops, the numerical
// reference) and a CUDA one (bf16, cuBLAS). The MAGI-2 layer's primitives (moe/magi2/ops.hpp) and
// the standard block's (moe/standard/std_ops.hpp) extend or hold one, so neither family reaches
// into the other's. Every call enqueues on `s` (host: runs synchronously).
#include "collectives/device.hpp"
#include "moe/init.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace layerbench::moe {

// Shape of C[m, n] = A[m, k] * W[n, k]^T with the leading dimensions of A, W and C.
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0, lda = 0, ldw = 0, ldc = 0;
};

class DenseOps {
 public:
  virtual ~DenseOps() = default;
  virtual DType act() const = 0;
  virtual std::string describe() const = 0;
  // Writes the seeded slice `f` (moe/init.hpp) to dst, stored as `t`.
  virtual void fill(void* dst, DType t, const SeededSlice& f, Stream s) = 0;
  // C[m, n] (ldc) = A[m, k] (lda) * W[n, k]^T (ldw)  (+ C when accumulate). nn.Linear.
  virtual void linear(const void* a, const void* w, void* c, const GemmShape& g, bool accumulate, Stream s) = 0;
  virtual void add(const void* x, const void* y, void* out, std::int64_t n, Stream s) = 0;
  // Host synchronisations made so far (a counts read-back, a workspace growth): the difference
  // over a layer is what keeps it from running ahead of the device (and out of a CUDA graph).
  // The host backend runs synchronously and counts none.
  virtual std::int64_t host_syncs() const { return 0; }
};

std::unique_ptr<DenseOps> make_host_dense_ops();
// Throws without CUDA.
std::unique_ptr<DenseOps> make_cuda_dense_ops(Device& dev);

}  // namespace layerbench::moe
