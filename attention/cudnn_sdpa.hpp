#pragma once
// cuDNN fused attention forward (bf16 in/out, fp32 accumulation, non-causal, optional softmax
// stats = LSE for merging partial outputs, GQA on the unified op) through
// the raw backend API. Two graph forms:
//   unified   CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR (cuDNN >= 9.13.1)
//   composite matmul -> scale -> softmax (max, sub, exp, sum, div) -> matmul, recognised by
//             the runtime-fusion engine (the fallback on older cuDNN)
// Engine choice: the first heuristic-mode-A config that finalizes (the frontend's choice; the
// later configs are the slower FA2-class kernels). Plans are cached per shape.
#include "attention/kernels.hpp"

#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>

namespace layerbench::attention {

enum class SdpaPath { automatic, unified, composite };
SdpaPath parse_sdpa_path(const std::string& s);  // "auto" | "unified" | "composite"

class CudnnSdpa {
 public:
  explicit CudnnSdpa(SdpaPath path = SdpaPath::automatic);
  ~CudnnSdpa();
  CudnnSdpa(const CudnnSdpa&) = delete;
  CudnnSdpa& operator=(const CudnnSdpa&) = delete;

  // Sequence-major tensors (kernels.hpp): q, o [Sq, B, H, D]; k, v [Skv, B, H, D], bf16.
  // `lse` (nullable): fp32 [B, H, Sq], written when given (a plan with the stats output).
  void prepare(const AttentionShape& a, bool with_stats = false);
  void run(const void* q, const void* k, const void* v, void* o, const AttentionShape& a,
           cudaStream_t s, float* lse = nullptr);
  // "cudnn 9.14.0 unified sdpa_fwd engine 9 (config 1 of 2)" for the last plan used.
  std::string describe() const { return described_; }
  static long long runtime_version();  // cudnnGetVersion()

 private:
  struct Plan;
  using Key = std::tuple<long long, long long, long long, int, int, float, int, long long, long long, bool>;
  Plan& plan_for(const AttentionShape& a, bool with_stats);

  void* handle_ = nullptr;  // cudnnHandle_t
  SdpaPath path_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
  std::string described_;
};

}  // namespace layerbench::attention
