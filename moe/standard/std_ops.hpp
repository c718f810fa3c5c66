#pragma once
// The compute primitives of the standard expert-parallel MoE block (moe/standard/std_block.hpp), with a
// host implementation (fp32 loops, the numerical reference) and a CUDA one (bf16 activations,
// fp32 router and accumulation; cuBLAS GEMMs and straightforward kernels). The dense GEMMs,
// fills and adds come from the backend's shared dense primitives (dense(), moe/dense_ops.hpp).
#include "moe/config/model.hpp"
#include "moe/dense_ops.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace layerbench::moe {

// How the expert MLPs run on the CUDA backend: one cuBLAS GEMM per expert with rows
// (per_expert), the same spread over 4 streams (multi_stream), one cuBLAS grouped GEMM over all
// of them (grouped), one cuBLAS batched GEMM over the experts padded to the largest row count
// (padded; hidden a multiple of 8, else per_expert), two persistent grouped TMA + wgmma GEMMs with the
// activation fused into gate/up and the tile list built on the device (wgmma; a compute capability 9.0
// device, hidden and inter multiples of 8, else per_expert), or automatic: the --expert-table row
// for the shape (layerbench-moe-kernels --models measures one), else default_expert_path.
enum class StdExpertPath { automatic, per_expert, grouped, multi_stream, padded, wgmma };
std::string_view to_string(StdExpertPath p);

// The path a shape runs without a --expert-table row (the fastest path measured for the device,
// results/moe/2026-12-06-h100-a): the grouped wgmma kernels wherever they apply (wgmma_ok); else
// one cuBLAS GEMM per expert at <= kFewLocalExperts local experts, else the padded batched GEMM when
// padding every expert to the largest row count costs at most kMaxPaddedWaste x the rows (rows known:
// one call's counts), else per-expert GEMMs over 4 streams. `rows` empty: the choice before the counts.
inline constexpr std::int64_t kFewLocalExperts = 16;
inline constexpr double kMaxPaddedWaste = 1.5;
StdExpertPath default_expert_path(bool wgmma_ok, std::int64_t experts, const std::vector<std::int64_t>& rows);
std::string default_expert_path_reason(bool wgmma_ok, std::int64_t experts);

class StdOps {
 public:
  virtual ~StdOps() = default;
  virtual DenseOps& dense() = 0;
  DType act() { return dense().act(); }
  // fp32 logits (n, e) = x (n, h) . w (e, h)^T; x and w in the act type.
  virtual void logits(const void* x, const void* w, float* out, std::int64_t n, std::int64_t h, std::int64_t e,
                      Stream s) = 0;
  // Every token through moe/config/router.hpp's definition: idx (n, k) int32, weight (n, k) fp32.
  virtual void route(const float* logits, const float* bias, const RouterSpec& spec, std::int64_t n, std::int64_t e,
                     std::int64_t k, std::int32_t* idx, float* weight, Stream s) = 0;
  // dst[i] = src[map[i]] / dst[map[i]] = src[i], rows of h act values.
  virtual void gather_rows(const void* src, const std::int32_t* map, void* dst, std::int64_t rows, std::int64_t h,
                           Stream s) = 0;
  virtual void scatter_rows(const void* src, const std::int32_t* map, void* dst, std::int64_t rows, std::int64_t h,
                            Stream s) = 0;
  // in (m, 2I) = [gate | up] -> out (m, I).
  virtual void glu(const void* in, void* out, std::int64_t m, std::int64_t inter, const ActivationSpec& a,
                   Stream s) = 0;
  // The expert MLPs over rows grouped expert-major: rows[e] rows of x (R, h) for local expert e
  // (host counts, zeros allowed); gate/up with w13 (E, 2I, h) into gu (R, 2I), the activation
  // into act (R, I), down with wd (E, h, I) into y (R, h). The default runs dense().linear per
  // expert and glu().
  virtual void expert_mlp(const void* x, const void* w13, const void* wd, void* gu, void* act, void* y,
                          const std::vector<std::int64_t>& rows, std::int64_t h, std::int64_t inter,
                          const ActivationSpec& a, Stream s);
  // The expert path (CUDA only; the host backend has one). Returns the path taken for a shape.
  virtual void set_expert_path(StdExpertPath) {}
  // One row of the automatic choice: the path for (h, inter, local experts).
  virtual void set_expert_choice(std::int64_t /*h*/, std::int64_t /*inter*/, std::int64_t /*experts*/, StdExpertPath) {}
  virtual StdExpertPath expert_path_for(std::int64_t /*h*/, std::int64_t /*inter*/, std::int64_t /*experts*/) const {
    return StdExpertPath::per_expert;
  }
  // Why expert_path_for chose what it did (a table row, the device's default, the caller).
  virtual std::string expert_choice_reason(std::int64_t /*h*/, std::int64_t /*inter*/, std::int64_t /*experts*/) const {
    return "the host backend has one path";
  }
  // out[t] = sum_j weight[t, j] * rows[slot[t, j]] (fp32 accumulation in j order), (n, h).
  virtual void combine(const void* rows, const std::int32_t* slot, const float* weight, void* out, std::int64_t n,
                       std::int64_t k, std::int64_t h, Stream s) = 0;
  // y[t] *= sigmoid(g[t]), y (n, h), g fp32 (n).
  virtual void gate_scale(void* y, const float* g, std::int64_t n, std::int64_t h, Stream s) = 0;
  // How a component runs on this backend (reported per component).
  virtual std::string path(std::string_view component) const = 0;
};

// Reads layerbench-moe-kernels' expert-path table (tab-separated: hidden, inter, experts, path;
// '#' comments) into ops.set_expert_choice. UsageError naming the file and line on a bad row.
void load_expert_table(StdOps& ops, const std::string& path);

std::unique_ptr<StdOps> make_host_std_ops();
// Throws without CUDA.
std::unique_ptr<StdOps> make_cuda_std_ops(Device& dev);

}  // namespace layerbench::moe
