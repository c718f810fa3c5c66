#pragma once
// The compute primitives of the MoE layer, behind one interface with two implementations:
//   host: fp32 activations and weights, plain loops (the numerical reference);
//   cuda: bf16 activations and weights, fp32 router / SwiGLU7 / accumulation; cuBLAS GEMMs,
//         a grouped expert GEMM and CUDA kernels for routing, permutation, SwiGLU7, combine.
// "act" below is the backend's activation type (fp32 on host, bf16 on cuda). All pointers are
// in the backend's memory; every call enqueues on `s` (host: runs synchronously).
// An Ops object owns the workspace of the routed experts, so use one per layer.
#include "collectives/device.hpp"
#include "moe/dense_ops.hpp"
#include "moe/magi2/config.hpp"
#include "moe/init.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace layerbench::moe {

// The routed-expert problem of one rank: local heads [0, heads_valid) of x.
struct RoutedArgs {
  const void* x = nullptr;          // act  (tokens, heads_local, d)
  const float* gate = nullptr;      // fp32 (heads_local, experts, d)    router weight
  const float* bias = nullptr;      // fp32 (heads_local, experts)       selection-only bias
  const void* w13 = nullptr;        // act  (heads_local*experts, d, 2*inter): [gate | up] columns
  const void* w_down = nullptr;     // act  (heads_local*experts, inter, d)
  void* y = nullptr;                // act  (tokens, heads_local, d)  heads >= heads_valid untouched
  std::int64_t tokens = 0, heads_local = 0, heads_valid = 0, experts = 0, d = 0, inter = 0, topk = 0;
  float scale = 4.9f;
};

struct LinearSeg {  // one GEMM of a modality-grouped linear: rows [row0, row0+rows) use `w`
  std::int64_t row0 = 0, rows = 0;
  const void* w = nullptr;
};

// The dense primitives (act, describe, fill, linear, add, host_syncs) come from DenseOps
// (moe/dense_ops.hpp); the rest is the MAGI-2 layer's own.
class Ops : public DenseOps {
 public:
  // The routing kernel path at this shape (reported per component).
  virtual std::string route_path(std::int64_t experts, std::int64_t d, std::int64_t k) const {
    (void)experts, (void)d, (void)k;
    return describe();
  }

  // y = x * rsqrt(mean(x^2) + 1e-6) * (w[modality] + 1), fp32 math. x, y: act (n, h).
  virtual void rms_norm(const void* x, const float* w /*(3, h)*/, void* y,
                        std::span<const Segment> segs, std::int64_t h, Stream s) = 0;
  // Packed SwiGLU7: in (m, 2n) with gate on even and up on odd channels -> out (m, n).
  virtual void swiglu_packed(const void* in, void* out, std::int64_t m, std::int64_t n,
                             Stream s) = 0;
  // in viewed (a, b, w) -> out (b, a, w): the dispatch / undispatch permutations.
  virtual void transpose_blocks(const void* in, void* out, std::int64_t a, std::int64_t b,
                                std::int64_t w, Stream s) = 0;
  // Router: sigmoid scores, top-k of score + bias, L1 normalise, scale. Keeps the result.
  virtual void route(const RoutedArgs& r, Stream s) = 0;
  // Experts for the last route(): gate/up GEMMs, SwiGLU7, down GEMM, fixed-order combine into y.
  virtual void experts(const RoutedArgs& r, Stream s) = 0;
  // The expert weights behind RoutedArgs were (re)written: drop any derived copy of them.
  virtual void weights_changed() {}
  // Assignments per local expert of the last route() (host copy; may synchronise).
  virtual std::vector<std::int64_t> expert_counts(const RoutedArgs& r) = 0;
};

// The CUDA expert paths, one name table. layerbench-moe offers the paths a measurement
// justifies (`in_profile`); the others are kernel-study variants, run by the GPU layer tests and
// timed alone by layerbench-moe-kernels.
enum class ExpertPath { automatic, device, device_wide, device_pairs, bucketed, fused, fused_down, fused_mma };
struct ExpertPathInfo {
  ExpertPath path;
  std::string_view name;
  bool in_profile;
  std::string_view help;
};
inline constexpr std::array<ExpertPathInfo, 8> kExpertPaths{{
    {ExpertPath::automatic, "auto", true, "device on compute capability 9.0 where both Hopper kernels apply; else bucketed"},
    {ExpertPath::device, "device", true,
     "device-side schedule: tiles built on the device from the counts, our TMA + wgmma gate/up GEMM (rows read "
     "straight from the tokens, SwiGLU7 in its epilogue) and down GEMM; no host synchronisation (CUDA-graph capturable)"},
    {ExpertPath::device_wide, "device-wide", true,
     "device, with the gate/up GEMM over 192-row tiles (three consumer warpgroups, a third fewer weight streams)"},
    {ExpertPath::device_pairs, "device-pairs", false,
     "device, with both kernels in 2-CTA clusters sharing each weight stage (measured slower)"},
    {ExpertPath::bucketed, "bucketed", true, "cuBLAS batched GEMMs over experts of similar load, SwiGLU7 pass"},
    {ExpertPath::fused, "fused", true,
     "host-planned: our gate/up + SwiGLU7 kernel (wgmma on Hopper, mma.sync elsewhere), cuBLAS down GEMMs over load "
     "buckets"},
    {ExpertPath::fused_down, "fused-down", false, "fused, plus our Hopper down-projection kernel"},
    {ExpertPath::fused_mma, "fused-mma", false, "the mma.sync gate/up + SwiGLU7 kernel on any GPU"},
}};
std::string_view to_string(ExpertPath p);
// Any name of the table; nullopt when unknown.
std::optional<ExpertPath> parse_expert_path(std::string_view name);

std::unique_ptr<Ops> make_host_ops();
// Throws without CUDA.
std::unique_ptr<Ops> make_cuda_ops(Device& dev, ExpertPath path);

// SwiGLU7 on one (gate, up) pair, fp32: min(g,7) * sigmoid(1.702 min(g,7)) * (clamp(u,-7,7)+1).
float swiglu7(float g, float u);

// The host reference of one (token, head), fp32, shared by HostOps and the profile's sampled
// expert check (moe/magi2/expert_check.cpp).
// Routing: score_e = sigmoid(x . gate_e); the k largest score + bias are selected (ties to the
// lower id); prob_j = score * scale / sum |score| over the selection. Returns the selection
// margin: (score + bias) of the k-th choice minus the best unselected one (+inf when k == E).
// `score` and `order` are workspaces of E entries.
float route_row(const float* x, const float* gate /*(E, d)*/, const float* bias /*(E)*/, std::int64_t experts,
                std::int64_t d, std::int64_t topk, float scale, std::span<float> score, std::span<std::int32_t> order,
                std::int32_t* idx, float* prob);
// acc (d) += p * (swiglu7(x W13) W_down) of one expert: w13 (d, 2I), w_down (I, d). `gu` (2I),
// `act` (I) and `out` (d) are workspaces.
void add_expert_row(const float* x, const float* w13, const float* w_down, std::int64_t d, std::int64_t inter,
                    float p, float* acc, std::span<float> gu, std::span<float> act, std::span<float> out);

}  // namespace layerbench::moe
