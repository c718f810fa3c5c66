#pragma once
// The expert-MLP paths of the standard block's CUDA ops beside one cuBLAS GEMM per expert
// (moe/standard/std_cuda_ops.cu chooses among them): one cuBLAS grouped GEMM per projection, per-expert
// GEMMs spread over 4 streams, and one cuBLAS batched GEMM per projection over the experts padded
// to the largest row count, and the grouped TMA + wgmma kernels of moe/hopper/std_grouped_sm90.cuh. Rows are
// expert-major and compact (rows[e] per local expert); bf16.
#include "collectives/device.hpp"
#include "moe/config/model.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace layerbench::moe::cuda {

class ExpertPaths {
 public:
  explicit ExpertPaths(Device& dev);
  ~ExpertPaths();
  ExpertPaths(const ExpertPaths&) = delete;
  ExpertPaths& operator=(const ExpertPaths&) = delete;
  // gate/up into gu (R, 2I), activation into act (R, I), down into y (R, h). grouped returns false,
  // having launched nothing, when this cuBLAS refuses the grouped GEMM.
  bool grouped(const void* x, const void* w13, const void* wd, void* gu, void* act, void* y,
               const std::vector<std::int64_t>& rows, std::int64_t h, std::int64_t inter, const ActivationSpec& a,
               cudaStream_t st);
  void multi_stream(const void* x, const void* w13, const void* wd, void* gu, void* act, void* y,
                    const std::vector<std::int64_t>& rows, std::int64_t h, std::int64_t inter,
                    const ActivationSpec& a, cudaStream_t st);
  // h a multiple of 8; uses its own padded workspaces (gu and act are not touched).
  void padded(const void* x, const void* w13, const void* wd, void* y, const std::vector<std::int64_t>& rows,
              std::int64_t h, std::int64_t inter, const ActivationSpec& a, cudaStream_t st);
  // The counts uploaded (only when they change) and std_expert_mlp_sm90: tiles built on the device,
  // gate/up with the activation into act (R, I), down into y. Returns false, having launched
  // nothing, where the kernels do not apply (std_grouped_sm90_supported).
  bool wgmma(const void* x, const void* w13, const void* wd, void* act, void* y, const std::vector<std::int64_t>& rows,
             std::int64_t h, std::int64_t inter, const ActivationSpec& a, cudaStream_t st);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace layerbench::moe::cuda
