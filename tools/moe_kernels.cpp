// layerbench-moe-kernels: the fused expert gate/up + SwiGLU7 kernels alone, one GPU, on a
// synthetic load (experts with seeded random row counts around a mean), checked against each
// other before timing (the Hopper kernel over 128-row tiles, over 192-row tiles (bit for bit) and
// in 2-CTA pairs). Prints median / min ms over the timed launches and the useful rate
// (2 FLOP per MAC of the GEMM over live rows; tile padding not counted): the gate/up kernels
// and, on Hopper, the down kernel (checked against an fp64 product of sampled rows first).
// --router-tokens T adds the router at T tokens for each of --router-heads: the fused router
// kernel and the unfused path (fp32 cuBLAS logits + top-k), which must choose the same experts
// before either is timed.
// --variants also times the Hopper kernels' variants (cuda::Sm90Variant) beside the defaults,
// each checked first: a gate/up variant against the default kernel (within bf16 rounding), a
// down variant bit for bit.
//   layerbench-moe-kernels [--experts 1536] [--mean-rows 352] [--d 256] [--inter 1280]
//                          [--router-tokens 15000 --router-heads 12,6] [--variants]
//   layerbench-moe-kernels --models deepseek-v3,qwen3-30b-a3b,... [--std-tokens 8192]
//                          [--expert-table FILE] [--counts-dir DIR]   (tools/std_kernels.cpp)
//                          [--precision bf16|fp8-rowwise|fp8-block]
//   (fp8-rowwise: the FP8 e4m3 grouped expert GEMMs instead, checked against the CPU oracle on
//   the dequantized operands before timing, tools/fp8_kernels.cpp; fp8-block: DeepSeek-V3's 1x128 /
//   128x128 block scales, the same checks and the fused act quantization beside the separate pass)
#include "common/cli/app.hpp"
#include "common/cli.hpp"
#include "common/numeric.hpp"
#include "common/output_file.hpp"
#include "common/usage.hpp"
#include "collectives/cuda_internal.hpp"
#include "collectives/device.hpp"
#include "collectives/types.hpp"
#include "moe/magi2/cuda_kernels.cuh"
#include "moe/init.hpp"
#include "moe/config/model.hpp"
#include "tools/fp8_kernels.hpp"
#include "tools/std_kernels.hpp"
#include "stats/summary.hpp"

#include <CLI/CLI.hpp>
#include <cublas_v2.h>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace layerbench;
using namespace layerbench::moe;

namespace {

using TimeFn = std::function<void(const std::string&, double, const std::function<void()>&)>;

// The router at T tokens x H heads (x bf16 (T, H, d), gate fp32 (H, 256, d), 256 experts,
// top-6, scale 4.9): the fused kernel and the unfused path must pick the same expert sets on all
// but near-tied (token, head) pairs (their logits round differently); then both are timed.
bool time_router(Device& dev, std::int64_t T, std::int64_t H, std::int64_t d, const TimeFn& time) {
  constexpr std::int64_t E = 256, K = 6;
  const auto st = detail::cuda_stream(dev.compute_stream());
  if (!cuda::fused_route_supported(E, d, K)) {
    fmt::print("router: the fused kernel does not apply (d_head {} or the device)\n", d);
    return true;
  }
  const std::int64_t A = T * H * K;
  Buffer x = dev.alloc(static_cast<std::size_t>(T * H * d) * 2), gate = dev.alloc(static_cast<std::size_t>(H * E * d) * 4);
  Buffer bias = dev.alloc(static_cast<std::size_t>(H * E) * 4);
  cuda::fill(x.data(), true, {.seed = 7, .tensor = 1, .scale = 1.7f, .rows = T * H, .cols = d, .full_cols = d, .ld = d}, st);
  cuda::fill(gate.data(), false, {.seed = 7, .tensor = 2, .scale = 1.0f / std::sqrt(float(d)), .rows = H * E, .cols = d, .full_cols = d, .ld = d}, st);
  cuda::fill(bias.data(), false, {.seed = 7, .tensor = 3, .scale = 0.02f, .rows = H, .cols = E, .full_cols = E, .ld = E}, st);
  Buffer split = dev.alloc(static_cast<std::size_t>(cuda::router_gate_split_elems(H, d)) * 2);
  Buffer xf = dev.alloc(static_cast<std::size_t>(T * H * d) * 4), logits = dev.alloc(static_cast<std::size_t>(H * T * E) * 4);
  Buffer idx[2] = {dev.alloc(A * 4), dev.alloc(A * 4)}, prob = dev.alloc(A * 4), vals = dev.alloc(A * 4);
  cublasHandle_t blas = nullptr;
  LB_CUBLAS_CHECK(cublasCreate(&blas));
  cuda::prepare_router_gate(gate.as<float>(), split.as<cuda::bf16>(), H, E, d, st);
  auto fused = [&](int* out) {
    cuda::fused_route(x.as<cuda::bf16>(), H, split.as<cuda::bf16>(), bias.as<float>(), out, prob.as<float>(),
                      vals.as<int>(), T, H, E, d, K, 4.9f, st);
  };
  auto unfused = [&](int* out) {
    cuda::route_sgemm(x.as<cuda::bf16>(), H, gate.as<float>(), bias.as<float>(), xf.as<float>(), logits.as<float>(), out,
                      prob.as<float>(), vals.as<int>(), T, H, E, d, K, 4.9f, blas, st);
  };
  fused(idx[0].as<int>());
  unfused(idx[1].as<int>());
  const auto a = dev.download<int>(idx[0].data(), static_cast<std::size_t>(A));
  const auto b = dev.download<int>(idx[1].data(), static_cast<std::size_t>(A));
  std::int64_t differ = 0;
  for (std::int64_t p = 0; p < T * H; ++p) {
    std::vector<int> sa(a.begin() + p * K, a.begin() + (p + 1) * K), sb(b.begin() + p * K, b.begin() + (p + 1) * K);
    std::sort(sa.begin(), sa.end());
    std::sort(sb.begin(), sb.end());
    differ += sa != sb;
  }
  fmt::print("router check, {} tokens x {} heads: fused and unfused expert sets differ on {} of {} pairs\n", T, H, differ,
             T * H);
  const double flops = 2.0 * static_cast<double>(T * H * E * d);
  const bool ok = differ * 100 <= T * H;  // near ties only
  if (ok) {
    time("router " + std::to_string(T) + " x " + std::to_string(H) + ", fused kernel", flops, [&] { fused(idx[0].as<int>()); });
    time("router " + std::to_string(T) + " x " + std::to_string(H) + ", fp32 cuBLAS + top-k", flops,
         [&] { unfused(idx[1].as<int>()); });
  } else {
    fmt::print(stderr, "error: the routers disagree beyond near ties\n");
  }
  cublasDestroy(blas);
  return ok;
}

// The variants --variants times: each field of cuda::Sm90Variant away from its default.
std::vector<std::pair<std::string, cuda::Sm90Variant>> gate_up_variants() {
  std::vector<std::pair<std::string, cuda::Sm90Variant>> out;
  for (const bool th : {true, false})
    for (const int pf : {0, 8, 16}) {
      cuda::Sm90Variant v;
      v.tanh_sigmoid = th;
      v.gate_up_prefetch = pf;
      out.emplace_back(fmt::format("gate/up variant: sigmoid {}, L2 prefetch {}", th ? "tanh" : "exp+rcp", pf), v);
    }
  return out;
}
std::vector<std::pair<std::string, cuda::Sm90Variant>> down_variants() {
  std::vector<std::pair<std::string, cuda::Sm90Variant>> out;
  for (const bool staged : {true, false})
    for (const bool half : {true, false})
      for (const int pf : {0, 4, 8})
        for (const bool pfb : {false, true}) {
          if (pf == 0 && pfb) continue;
          if (pf > 0 && !(staged && half)) continue;
          cuda::Sm90Variant v;
          v.staged_epilogue = staged;
          v.half_tiles = half;
          v.down_prefetch = pf;
          v.down_prefetch_b = pfb;
          out.emplace_back(fmt::format("down variant: staged {:d}, half tiles {:d}, L2 prefetch {}{}", staged, half, pf,
                                       pfb ? " +weights" : ""),
                           v);
        }
  return out;
}

// Two bf16 outputs of gate/up kernels agree within bf16 rounding of the larger (2% of max |out|).
bool close_to(const std::vector<std::uint16_t>& ref, const std::vector<std::uint16_t>& got, const std::string& what) {
  double err = 0, mx = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double x = bf16_bits_to_float(got[i]), y = bf16_bits_to_float(ref[i]);
    err = std::max(err, std::fabs(x - y));
    mx = std::max(mx, std::fabs(y));
  }
  fmt::print("check: {} vs the default kernel max |diff| {:.3g} (max |out| {:.3g})\n", what, err, mx);
  const bool ok = err <= 2e-2 * mx && mx > 0;
  if (!ok) fmt::print(stderr, "error: {} disagrees with the default kernel\n", what);
  return ok;
}

// What the study holds at once, in bytes (nullopt on overflow). On the device: x, W13 and its
// K-major copy, two activations, W_down and its copy, two outputs, then the largest router case
// (x in bf16 and fp32, fp32 logits, 256 x d gates, top-6 indices and weights). On the host, the
// checks' downloads: both activations, or one activation, W_down and one output, or the router's
// two expert choices.
struct StudyBytes {
  std::optional<std::uint64_t> device, host;
};
StudyBytes study_bytes(std::int64_t experts, std::int64_t mean_rows, double spread, std::int64_t d, std::int64_t inter,
                       std::int64_t router_tokens, std::int64_t router_heads) {
  const auto rows = static_cast<std::uint64_t>(std::ceil(static_cast<double>(experts) * static_cast<double>(mean_rows) *
                                                         (1 + spread))) + static_cast<std::uint64_t>(experts);
  const auto E = static_cast<std::uint64_t>(experts), D = static_cast<std::uint64_t>(d), I = static_cast<std::uint64_t>(inter);
  auto sum = [](std::initializer_list<std::initializer_list<std::uint64_t>> terms) {
    std::optional<std::uint64_t> total = 0;
    for (const auto& factors : terms) {
      std::optional<std::uint64_t> p = 1;
      for (auto x : factors) p = p ? num::mul(*p, x) : std::nullopt;
      total = total && p ? num::add(*total, *p) : std::nullopt;
    }
    return total;
  };
  const auto T = static_cast<std::uint64_t>(router_tokens), H = static_cast<std::uint64_t>(router_heads);
  const auto device = sum({{6, rows, D}, {4, rows, I}, {12, E, D, I}, {6, T, H, D}, {4, T, H, 256}, {6, H, 256, D},
                           {16, T, H, 6}});
  std::optional<std::uint64_t> host = 0;
  for (const auto& part : {sum({{4, rows, I}}), sum({{2, rows, I}, {2, E, I, D}, {2, rows, D}}), sum({{8, T, H, 6}})})
    host = host && part ? std::optional(std::max(*host, *part)) : std::nullopt;
  return {device, host};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"layerbench-moe-kernels: the fused expert gate/up + SwiGLU7 kernels on one GPU"};
  layerbench::cli::init_app(app, "layerbench-moe-kernels");
  std::int64_t experts = 1536, mean_rows = 352, d = 256, inter = 1280;
  int iterations = 30, warmup = 5;
  std::int64_t router_tokens = 0;
  std::vector<std::int64_t> router_heads{12, 6};
  double spread = 0.3;
  // Flags go through the numeric layer (common/cli.hpp): a bad value exits 2 with the same message
  // as in every binary, before any GPU is needed.
  constexpr std::int64_t big = std::int64_t{1} << 20;
  cli::add_int(app, "--experts", experts, "experts (an SP2 rank of the released geometry: 6 heads x 256)",
               std::int64_t{1}, big);
  cli::add_int(app, "--mean-rows", mean_rows, "mean rows per expert (7500 x 2 tokens x top-6 / 256)", std::int64_t{1},
               big);
  cli::add_real(app, "--spread", spread, "row counts uniform in mean x [1 - spread, 1 + spread]",
                num::RealRange::closed(0, 1));
  cli::add_int(app, "--d", d, "d_head (K of the gate/up GEMM), a multiple of 8", std::int64_t{8}, std::int64_t{256});
  cli::add_int(app, "--inter", inter, "expert intermediate size I, a multiple of 8", std::int64_t{8}, big);
  cli::add_int(app, "--iterations", iterations, "timed launches", 1, 1'000'000);
  cli::add_int(app, "--warmup", warmup, "untimed launches first", 0, 1'000'000);
  cli::add_int(app, "--router-tokens", router_tokens, "also time the router at this many tokens (0: skip)",
               std::int64_t{0}, std::int64_t{1} << 24);
  cli::add_int_list(app, "--router-heads", router_heads, "router: local heads per case (256 experts each, d_head = --d)",
                    std::int64_t{1}, std::int64_t{1024}, 64);
  bool variants = false;
  app.add_flag("--variants", variants, "also time the Hopper kernels' variants beside the defaults");
  std::vector<std::string> models;
  std::int64_t std_tokens = 8192;
  std::string expert_table, counts_dir;
  app.add_option("--models", models, "instead: the standard block's router and expert paths at these presets' shapes")
      ->delimiter(',');
  cli::add_int(app, "--std-tokens", std_tokens, "--models: tokens (all experts local)", std::int64_t{1}, big);
  app.add_option("--expert-table", expert_table, "--models: write the faster expert path per shape here");
  app.add_option("--counts-dir", counts_dir, "--models: write each preset's routed row counts here");
  std::string precision = "bf16";
  app.add_option("--precision", precision,
                 "--models: the experts' precision: bf16, fp8-rowwise (e4m3, one scale per row and per output "
                 "channel) or fp8-block (DeepSeek-V3's 1x128 / 128x128 scales)")
      ->check(CLI::IsMember({"bf16", "fp8-rowwise", "fp8-block"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (precision != "bf16") {
    if (models.empty()) {
      fmt::print(stderr, "layerbench-moe-kernels: --precision {}: applies to --models only\n", precision);
      return kExitUsage;
    }
    if (!expert_table.empty()) {
      fmt::print(stderr, "layerbench-moe-kernels: --expert-table: the expert-path table is written by the bf16 study "
                         "only (--precision bf16)\n");
      return kExitUsage;
    }
  }
  if (models.empty() && (!expert_table.empty() || !counts_dir.empty())) {
    fmt::print(stderr, "layerbench-moe-kernels: {}: applies to --models only\n",
               expert_table.empty() ? "--counts-dir" : "--expert-table");
    return kExitUsage;
  }
  if (!models.empty()) {
    try {
      for (const auto& name : models) (void)preset(name);  // UsageError on an unknown name, before the GPU
      if (!counts_dir.empty()) check_output_dir(counts_dir, "--counts-dir");  // created when missing
      if (!expert_table.empty()) check_output_path(expert_table, "--expert-table");
      if (cuda_device_count() == 0) throw UsageError("no CUDA device is visible (the kernel study runs on one GPU)");
    } catch (const UsageError& e) {
      fmt::print(stderr, "layerbench-moe-kernels: {}\n", e.what());
      return kExitUsage;
    }
    if (precision != "bf16")
      return run_fp8_study(models, std_tokens, warmup, iterations, counts_dir, precision == "fp8-block");
    return run_std_study(models, std_tokens, warmup, iterations, expert_table, counts_dir);
  }
  try {
    const auto bytes = study_bytes(experts, mean_rows, spread, d, inter, router_tokens,
                                   *std::max_element(router_heads.begin(), router_heads.end()));
    const char* hint = "lower --experts, --mean-rows, --inter or --router-tokens";
    for (const auto& [flag, v] : {std::pair{"--d", d}, std::pair{"--inter", inter}})
      if (v % 8 != 0) throw UsageError(fmt::format("{} {}: must be a multiple of 8", flag, v));
    num::check_memory(bytes.host, 1, "the kernel study (its host copies)", hint);
    if (cuda_device_count() == 0)
      throw UsageError("no CUDA device is visible (the kernel study runs on one GPU)");
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess && (!bytes.device || *bytes.device > free_bytes))
      throw UsageError(fmt::format("the kernel study needs about {} of GPU memory, but device 0 has {} free; {}",
                                   bytes.device ? num::format_bytes(static_cast<double>(*bytes.device)) : "more than 2^64 bytes",
                                   num::format_bytes(static_cast<double>(free_bytes)), hint));
  } catch (const UsageError& e) {
    fmt::print(stderr, "layerbench-moe-kernels: {}\n", e.what());
    return kExitUsage;
  }
  auto dev = make_cuda_device(0);
  const auto st = detail::cuda_stream(dev->compute_stream());

  // Seeded counts, compact expert-major rows, 128-row tiles in expert order.
  std::vector<int> counts(experts);
  std::vector<std::int64_t> base(experts);
  std::int64_t rows = 0, live = 0;
  for (std::int64_t e = 0; e < experts; ++e) {
    const double u = seeded_value(5, 9, static_cast<std::uint64_t>(e), 1.0f);  // [-1, 1)
    counts[e] = std::max(1, static_cast<int>(std::lround(mean_rows * (1.0 + spread * u))));
    base[e] = rows;
    rows += counts[e];
    live += counts[e];
  }
  std::vector<int> order(experts);
  for (std::int64_t e = 0; e < experts; ++e) order[e] = static_cast<int>(e);
  std::vector<cuda::ExpertTile> tiles(static_cast<std::size_t>(expert_tile_count(counts, order)));
  fill_expert_tiles(counts, base, order, tiles);
  std::vector<std::uint8_t> tile_bytes(tiles.size() * sizeof(cuda::ExpertTile));
  std::memcpy(tile_bytes.data(), tiles.data(), tile_bytes.size());
  Buffer dt = dev->upload(tile_bytes);
  Buffer dx = dev->alloc(static_cast<std::size_t>(rows * d) * 2);
  Buffer dw = dev->alloc(static_cast<std::size_t>(experts * d * 2 * inter) * 2);
  Buffer dwk = dev->alloc(static_cast<std::size_t>(cuda::w13_kmajor_elems(experts, d, inter)) * 2);
  Buffer da = dev->alloc(static_cast<std::size_t>(rows * inter) * 2);
  Buffer db = dev->alloc(static_cast<std::size_t>(rows * inter) * 2);
  cuda::fill(dx.data(), true, {.seed = 3, .tensor = 1, .scale = 1.7f, .rows = rows, .cols = d, .full_cols = d, .ld = d}, st);
  cuda::fill(dw.data(), true, {.seed = 3, .tensor = 2, .scale = 1.0f / std::sqrt(float(d)), .rows = experts * d, .cols = 2 * inter, .full_cols = 2 * inter, .ld = 2 * inter}, st);
  const auto* xs = static_cast<const cuda::bf16*>(dx.data());
  const auto* w13 = static_cast<const cuda::bf16*>(dw.data());
  const auto* w13k = static_cast<const cuda::bf16*>(dwk.data());
  const auto* tl = static_cast<const cuda::ExpertTile*>(dt.data());
  const auto nt = static_cast<std::int64_t>(tiles.size());
  const bool sm90 = cuda::gate_up_swiglu_sm90_supported(d, inter);
  if (sm90) cuda::prepare_w13_kmajor(w13, static_cast<cuda::bf16*>(dwk.data()), experts, d, inter, st);

  // Check: the two kernels agree on every live row (both are checked against the CPU in
  // test_expert_gemm_gpu at small shapes).
  if (sm90) {
    cuda::gate_up_swiglu_sm90(xs, rows, w13k, experts, da.as<cuda::bf16>(), tl, nt, d, inter, st);
    cuda::gate_up_swiglu(xs, w13, db.as<cuda::bf16>(), tl, nt, d, inter, st);
    const auto a = dev->download<std::uint16_t>(da.data(), static_cast<std::size_t>(rows * inter));
    const auto b = dev->download<std::uint16_t>(db.data(), static_cast<std::size_t>(rows * inter));
    double err = 0, mx = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double x = bf16_bits_to_float(a[i]), y = bf16_bits_to_float(b[i]);
      err = std::max(err, std::fabs(x - y));
      mx = std::max(mx, std::fabs(y));
    }
    fmt::print("check: wgmma vs mma.sync max |diff| {:.3g} (max |out| {:.3g}) over {} rows\n", err, mx, rows);
    if (!(err <= 2e-2 * mx) || !(mx > 0)) {
      fmt::print(stderr, "error: the kernels disagree\n");
      return 1;
    }
  }

  const double flop = 2.0 * static_cast<double>(live) * static_cast<double>(d) * 2.0 * static_cast<double>(inter);
  fmt::print("experts {}, rows {} (mean {}, spread {}), d {}, I {}, tiles {}, {:.3f} TFLOP per launch\n", experts,
             rows, mean_rows, spread, d, inter, nt, flop * 1e-12);
  fmt::print("| kernel | median ms | min ms | TFLOP/s (median) |\n|---|---:|---:|---:|\n");
  auto time_flops = [&](const std::string& name, double flops, const std::function<void()>& launch) {
    const Timing t = time_it(*dev, warmup, iterations, launch);
    fmt::print("| {} | {:.4f} | {:.4f} | {:.1f} |\n", name, t.median, t.min, flops / (t.median * 1e-3) * 1e-12);
  };
  double flop_scale = 1.0;  // the down GEMM has half the gate/up FLOPs
  auto time = [&](const char* name, const std::function<void()>& launch) { time_flops(name, flop_scale * flop, launch); };
  // The device-built paired list of the device-side schedule (2-CTA clusters sharing each
  // weight stage); its results must equal the unpaired kernels' bit for bit.
  std::vector<int> offs(counts.size());
  for (std::size_t e = 0; e < counts.size(); ++e) offs[e] = static_cast<int>(base[e]);
  Buffer dcounts = dev->upload(counts), doffs = dev->upload(offs), dlive = dev->alloc(4);
  const std::int64_t pn = cuda::max_expert_tiles(live, experts);
  Buffer dpt = dev->alloc(static_cast<std::size_t>(pn) * sizeof(cuda::ExpertTile));
  cuda::build_expert_tiles(dcounts.as<int>(), doffs.as<int>(), dpt.as<cuda::ExpertTile>(), dlive.as<int>(), experts, pn,
                           true, st);
  const auto* pt = dpt.as<cuda::ExpertTile>();
  auto same = [&](const Buffer& x, const Buffer& y, std::size_t n, const char* what) {
    const bool eq = dev->download<std::uint16_t>(x.data(), n) == dev->download<std::uint16_t>(y.data(), n);
    if (!eq) fmt::print(stderr, "error: {}: differs from the default unpaired kernel\n", what);
    return eq;
  };
  if (sm90) {
    cuda::gate_up_swiglu_sm90(xs, rows, w13k, experts, db.as<cuda::bf16>(), pt, pn, d, inter, st, true);
    if (!same(da, db, static_cast<std::size_t>(rows * inter), "gate/up")) return 1;
    time("wgmma (sm_90a)", [&] { cuda::gate_up_swiglu_sm90(xs, rows, w13k, experts, da.as<cuda::bf16>(), tl, nt, d, inter, st); });
    time("wgmma (sm_90a), 2-CTA pairs",
         [&] { cuda::gate_up_swiglu_sm90(xs, rows, w13k, experts, da.as<cuda::bf16>(), pt, pn, d, inter, st, true); });
    // The wide kernel (192-row tiles, the device-wide path's) over the same experts: the
    // same MMAs per row, so the same bits.
    std::vector<cuda::ExpertTile> wide(static_cast<std::size_t>(expert_tile_count(counts, order, kWideTileRows)));
    fill_expert_tiles(counts, base, order, wide, kWideTileRows);
    std::vector<std::uint8_t> wide_bytes(wide.size() * sizeof(cuda::ExpertTile));
    std::memcpy(wide_bytes.data(), wide.data(), wide_bytes.size());
    Buffer dwt = dev->upload(wide_bytes);
    const auto* wtl = dwt.as<cuda::ExpertTile>();
    const auto nwt = static_cast<std::int64_t>(wide.size());
    auto run_wide = [&] {
      cuda::gate_up_swiglu_sm90(xs, rows, w13k, experts, db.as<cuda::bf16>(), wtl, nwt, d, inter, st, false, {},
                                kWideTileRows);
    };
    run_wide();
    if (!same(da, db, static_cast<std::size_t>(rows * inter), "gate/up, 192-row tiles")) return 1;
    time("wgmma (sm_90a), 192-row tiles", run_wide);
    if (variants) {
      const auto ref = dev->download<std::uint16_t>(da.data(), static_cast<std::size_t>(rows * inter));
      for (const auto& [label, v] : gate_up_variants()) {
        cuda::gate_up_swiglu_sm90(xs, rows, w13k, experts, db.as<cuda::bf16>(), tl, nt, d, inter, st, false, v);
        if (!close_to(ref, dev->download<std::uint16_t>(db.data(), ref.size()), label)) return 1;
        time(label.c_str(),
             [&] { cuda::gate_up_swiglu_sm90(xs, rows, w13k, experts, db.as<cuda::bf16>(), tl, nt, d, inter, st, false, v); });
      }
    }
  }
  time("mma.sync", [&] { cuda::gate_up_swiglu(xs, w13, db.as<cuda::bf16>(), tl, nt, d, inter, st); });
  if (cuda::down_sm90_supported(d, inter)) {
    // The down GEMM over the same tiles: act (rows, I) x W_down (E, I, d).
    Buffer dwd = dev->alloc(static_cast<std::size_t>(experts * inter * d) * 2);
    Buffer dwdk = dev->alloc(static_cast<std::size_t>(cuda::wdown_kmajor_elems(experts, inter)) * 2);
    Buffer dy = dev->alloc(static_cast<std::size_t>(rows * d) * 2);
    cuda::fill(dwd.data(), true, {.seed = 3, .tensor = 4, .scale = 1.0f / std::sqrt(float(inter)), .rows = experts * inter, .cols = d, .full_cols = d, .ld = d}, st);
    cuda::prepare_wdown_kmajor(dwd.as<cuda::bf16>(), dwdk.as<cuda::bf16>(), experts, d, inter, st);
    if (!sm90)  // act comes from the gate/up kernel only on the wgmma path: seed it otherwise
      cuda::fill(da.data(), true, {.seed = 3, .tensor = 5, .scale = 1.0f, .rows = rows, .cols = inter, .full_cols = inter, .ld = inter}, st);
    // Check the down kernel before timing it: sampled rows of every 97th expert against an fp64
    // product of the same bf16 inputs (act from the gate/up kernel above).
    cuda::down_sm90(da.as<cuda::bf16>(), rows, dwdk.as<cuda::bf16>(), experts, dy.as<cuda::bf16>(), tl, nt, d, inter, st);
    const auto act = dev->download<std::uint16_t>(da.data(), static_cast<std::size_t>(rows * inter));
    const auto wdn = dev->download<std::uint16_t>(dwd.data(), static_cast<std::size_t>(experts * inter * d));
    const auto y = dev->download<std::uint16_t>(dy.data(), static_cast<std::size_t>(rows * d));
    double derr = 0, dmax = 0;
    std::int64_t checked = 0;
    for (std::int64_t e = 0; e < experts; e += 97) {
      for (std::int64_t r : {std::int64_t{0}, std::int64_t{counts[e] - 1}}) {
        const std::int64_t row = base[e] + r;
        for (std::int64_t col = 0; col < d; ++col) {
          double ref = 0;
          for (std::int64_t q = 0; q < inter; ++q)
            ref += double(bf16_bits_to_float(act[row * inter + q])) *
                   bf16_bits_to_float(wdn[(e * inter + q) * d + col]);
          derr = std::max(derr, std::fabs(ref - bf16_bits_to_float(y[row * d + col])));
          dmax = std::max(dmax, std::fabs(ref));
        }
        ++checked;
      }
    }
    fmt::print("check: down kernel vs fp64 max |diff| {:.3g} (max |ref| {:.3g}) over {} rows\n", derr, dmax, checked);
    if (!(derr <= 2e-2 * dmax) || !(dmax > 0)) {
      fmt::print(stderr, "error: the down kernel disagrees with the reference\n");
      return 1;
    }
    const double down_flop = 2.0 * static_cast<double>(live) * static_cast<double>(d) * static_cast<double>(inter);
    flop_scale = down_flop / flop;
    Buffer dy2 = dev->alloc(static_cast<std::size_t>(rows * d) * 2);
    cuda::down_sm90(da.as<cuda::bf16>(), rows, dwdk.as<cuda::bf16>(), experts, dy.as<cuda::bf16>(), tl, nt, d, inter, st);
    cuda::down_sm90(da.as<cuda::bf16>(), rows, dwdk.as<cuda::bf16>(), experts, dy2.as<cuda::bf16>(), pt, pn, d, inter, st,
                    dlive.as<int>(), true);
    if (!same(dy, dy2, static_cast<std::size_t>(rows * d), "down")) return 1;
    time("down GEMM, wgmma (sm_90a)", [&] {
      cuda::down_sm90(da.as<cuda::bf16>(), rows, dwdk.as<cuda::bf16>(), experts, dy.as<cuda::bf16>(), tl, nt, d, inter, st);
    });
    time("down GEMM, wgmma (sm_90a), 2-CTA pairs", [&] {
      cuda::down_sm90(da.as<cuda::bf16>(), rows, dwdk.as<cuda::bf16>(), experts, dy2.as<cuda::bf16>(), pt, pn, d, inter, st,
                      dlive.as<int>(), true);
    });
    for (const auto& [label, v] : variants ? down_variants() : std::vector<std::pair<std::string, cuda::Sm90Variant>>{}) {
      auto run = [&, v = v] {
        cuda::down_sm90(da.as<cuda::bf16>(), rows, dwdk.as<cuda::bf16>(), experts, dy2.as<cuda::bf16>(), tl, nt, d, inter, st,
                        nullptr, false, v);
      };
      run();
      if (!same(dy, dy2, static_cast<std::size_t>(rows * d), label.c_str())) return 1;
      time(label.c_str(), run);
    }
  }
  for (const auto h : router_heads)
    if (router_tokens > 0 && !time_router(*dev, router_tokens, h, d, time_flops)) return 1;
  return 0;
}