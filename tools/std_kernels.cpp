// layerbench-moe-kernels --models: the standard block's router and expert MLPs alone, one GPU,
// at each preset's shape (all experts local, --std-tokens tokens), the inputs seeded:
//   router     cuBLAS logits (fp32 out) + the warp selection kernel, checked first against
//              moe/config/router.cpp on the downloaded logits of the first 512 tokens (near-ties apart);
//              also each half alone;
//   experts    row counts from that routing; gate/up GEMMs + activation + down GEMMs as one
//              cuBLAS GEMM per expert (one stream, and spread over 4), as cuBLAS grouped GEMMs and as
//              one cuBLAS batched GEMM over the experts padded to the largest count, and as the
//              grouped TMA + wgmma kernels (activation fused, tile lists built on the device; also
//              each stage alone),
//              checked against each other (bf16 rounding; the two per-expert paths bit for bit)
//              before timing; the activation alone beside.
// The fastest expert path per shape goes to --expert-table (hidden, inter, experts, path), which
// layerbench-moe --expert-table reads; --counts-dir writes each preset's row counts
// (counts-<model>.txt) and its description (model-<model>.json) for the torch side-by-side (bench/moe/torch_std.py).
#include "tools/std_kernels.hpp"
#include "common/json_text.hpp"

#include "collectives/cuda_internal.hpp"
#include "collectives/device.hpp"
#include "collectives/types.hpp"
#include "moe/magi2/cuda_kernels.cuh"
#include "moe/init.hpp"
#include "moe/config/router.hpp"
#include "moe/hopper/std_grouped_sm90.cuh"
#include "moe/standard/std_ops.hpp"
#include "stats/ratio.hpp"
#include "stats/summary.hpp"

#include <fmt/core.h>
#include <fmt/os.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace layerbench::moe {

Timing time_it(Device& dev, int warmup, int iterations, const std::function<void()>& launch) {
  const Stream cs = dev.compute_stream();
  auto timer = dev.make_timer();
  for (int i = 0; i < warmup; ++i) launch();
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    timer->start(cs);
    launch();
    timer->stop(cs);
    ms.push_back(timer->elapsed_ms());
  }
  const auto s = stats::summarize(ms);
  return {s.median, s.min};
}

namespace {

void row(const std::string& model, const std::string& what, Timing t, double flop) {
  fmt::print("| {} | {} | {:.4f} | {:.4f} | {} |\n", model, what, t.median, t.min,
             flop > 0 ? fmt::format("{:.1f}", flop / (t.median * 1e-3) * 1e-12) : "");
}

Buffer seeded_bf16(Device& dev, std::int64_t rows, std::int64_t cols, std::uint32_t tensor, float scale) {
  Buffer b = dev.alloc(static_cast<std::size_t>(std::max<std::int64_t>(rows * cols, 8)) * 2);
  cuda::fill(b.data(), true, {.seed = 11, .tensor = tensor, .scale = scale, .rows = rows, .cols = cols, .full_cols = cols, .ld = cols},
             detail::cuda_stream(dev.compute_stream()));
  return b;
}

// Routes T tokens; checks the first 512 against the host definition. Returns false on a mismatch.
bool time_router(Device& dev, StdOps& ops, const Model& m, std::int64_t T, int warmup, int iterations,
                 std::vector<std::int64_t>& counts) {
  const std::int64_t H = m.hidden, E = m.experts, k = m.topk;
  Buffer x = seeded_bf16(dev, T, H, 1, std::sqrt(3.0f)), w = seeded_bf16(dev, E, H, 2, std::sqrt(3.0f / float(H)));
  Buffer bias = dev.alloc(static_cast<std::size_t>(E) * 4);
  cuda::fill(bias.data(), false, {.seed = 11, .tensor = 3, .scale = 0.05f, .rows = 1, .cols = E, .full_cols = E, .ld = E},
             detail::cuda_stream(dev.compute_stream()));
  Buffer logits = dev.alloc(static_cast<std::size_t>(T * E) * 4), idx = dev.alloc(static_cast<std::size_t>(T * k) * 4),
         wt = dev.alloc(static_cast<std::size_t>(T * k) * 4);
  const Stream s = dev.compute_stream();
  auto logit = [&] { ops.logits(x.data(), w.data(), logits.as<float>(), T, H, E, s); };
  auto select = [&] {
    ops.route(logits.as<float>(), bias.as<float>(), m.router, T, E, k, idx.as<std::int32_t>(), wt.as<float>(), s);
  };
  logit();
  select();
  const std::int64_t n = std::min<std::int64_t>(T, 512);
  const auto l = dev.download<float>(logits.data(), static_cast<std::size_t>(n * E));
  const auto b = dev.download<float>(bias.data(), static_cast<std::size_t>(E));
  const auto ids = dev.download<std::int32_t>(idx.data(), static_cast<std::size_t>(T * k));
  std::vector<float> work(static_cast<std::size_t>(3 * E)), hw(static_cast<std::size_t>(k));
  std::vector<std::int32_t> hi(static_cast<std::size_t>(k));
  std::int64_t bad = 0, near = 0;
  for (std::int64_t t = 0; t < n; ++t) {
    if (route_token(l.data() + t * E, b.data(), m.router, E, k, hi.data(), hw.data(), work) < 1e-5f) {
      ++near;
      continue;
    }
    for (std::int64_t j = 0; j < k; ++j) bad += ids[static_cast<std::size_t>(t * k + j)] != hi[static_cast<std::size_t>(j)];
  }
  fmt::print("check: {} router vs the host definition on {} tokens: {} mismatches, {} near-ties skipped\n", m.name, n,
             bad, near);
  if (bad > 0) return false;
  counts.assign(static_cast<std::size_t>(E), 0);
  for (auto e : ids) ++counts[static_cast<std::size_t>(e)];
  const double flop = 2.0 * double(T) * double(E) * double(H);
  row(m.name, "routing (logits GEMM + warp selection)", time_it(dev, warmup, iterations, [&] { logit(); select(); }), flop);
  row(m.name, "routing: logits GEMM alone (cuBLAS, fp32 out)", time_it(dev, warmup, iterations, logit), flop);
  row(m.name, "routing: selection kernel alone", time_it(dev, warmup, iterations, select), 0);
  return true;
}

// What a half tile costs: the gate/up GEMM over E experts of 64 rows each (every tile a half
// tile: one consumer warpgroup) against E experts of 128 rows (whole tiles), launches alternated
// in each iteration so that both run at the same clocks. 1.0 would mean a warpgroup alone keeps
// the tensor cores as busy as two; 0.5, that a half tile costs half. Needs 128 E rows of x.
void half_tile_probe(Device& dev, const Model& m, const Buffer& x, const Buffer& w13, Buffer& act, int warmup,
                     int iterations) {
  const std::int64_t H = m.hidden, I = m.moe_intermediate, E = m.experts;
  if (x.bytes() < static_cast<std::size_t>(E * 128 * H) * 2 || act.bytes() < static_cast<std::size_t>(E * 128 * I) * 2)
    return;
  const cudaStream_t st = detail::cuda_stream(dev.compute_stream());
  struct Probe {
    Buffer counts, work;
    cuda::StdGroupedWork w;
  };
  auto make = [&](int rows) {
    Probe p;
    p.counts = dev.upload(std::vector<int>(static_cast<std::size_t>(E), rows));
    p.work = dev.alloc(static_cast<std::size_t>(cuda::std_grouped_work_bytes(E * rows, E, H, I)));
    p.w = cuda::std_grouped_work(p.work.data(), E * rows, E, H, I);
    cuda::std_grouped_tiles(p.counts.as<int>(), E, cuda::std_gate_up_blocks(I), cuda::std_down_blocks(H), p.w.gu,
                            p.w.gu_max, p.w.dn, p.w.dn_max, p.w.live, st);
    return p;
  };
  Probe half = make(64), whole = make(128);
  auto run = [&](const Probe& p, int rows) {
    cuda::std_gate_up_sm90(x.as<__nv_bfloat16>(), E * rows, H, w13.as<__nv_bfloat16>(), E, I, act.as<__nv_bfloat16>(),
                           p.w.gu, p.w.gu_max, p.w.live, m.activation, st);
  };
  const Stream cs = dev.compute_stream();
  auto t_half = dev.make_timer(), t_whole = dev.make_timer();
  for (int i = 0; i < warmup; ++i) {
    run(half, 64);
    run(whole, 128);
  }
  std::vector<double> a, b, ratio;
  for (int i = 0; i < iterations; ++i) {
    t_half->start(cs);
    run(half, 64);
    t_half->stop(cs);
    t_whole->start(cs);
    run(whole, 128);
    t_whole->stop(cs);
    a.push_back(t_half->elapsed_ms());
    b.push_back(t_whole->elapsed_ms());
    ratio.push_back(a.back() / b.back());
  }
  const auto sa = stats::summarize(a), sb = stats::summarize(b);
  const auto sr = stats::median_interval(ratio, 0.95, 2000, 20261202);
  const double flop = 4.0 * double(E) * double(H) * double(I);
  row(m.name, "wgmma gate/up alone, every expert 64 rows (half tiles)", {sa.median, sa.min}, 64 * flop);
  row(m.name, "wgmma gate/up alone, every expert 128 rows (whole tiles)", {sb.median, sb.min}, 128 * flop);
  fmt::print("half-tile probe: {} gate/up with 64 rows per expert takes {:.3f} [{:.3f}, {:.3f}] of the time of 128 "
             "rows (median of {} alternated pairs, 95% bootstrap interval)\n",
             m.name, sr.value, sr.ci.low, sr.ci.high, iterations);
}

// The grouped wgmma path (where the device and shape take it): checked against the per-expert
// output `ref` first, then timed whole (through the ops, as the block runs it) and stage by stage
// (tile lists, gate/up with the activation, down; each launch variant) on the same device-built lists.
// Returns the whole path's timing, nullopt where it does not apply; false on a mismatch.
bool time_wgmma(Device& dev, StdOps& ops, const Model& m, const std::vector<std::int64_t>& counts,
                const std::vector<std::uint16_t>& ref, double max_out, const Buffer& x, const Buffer& w13,
                const Buffer& wd, Buffer& act, int warmup, int iterations, std::optional<Timing>& whole) {
  const std::int64_t H = m.hidden, I = m.moe_intermediate, E = m.experts;
  if (!cuda::std_grouped_sm90_supported(H, I, E)) return true;
  std::int64_t R = 0;
  for (auto c : counts) R += c;
  Buffer y = dev.alloc(static_cast<std::size_t>(R * H) * 2), gu;
  const Stream s = dev.compute_stream();
  auto run = [&] {
    ops.set_expert_path(StdExpertPath::wgmma);
    ops.expert_mlp(x.data(), w13.data(), wd.data(), gu.data(), act.data(), y.data(), counts, H, I, m.activation, s);
  };
  run();
  const auto out = dev.download<std::uint16_t>(y.data(), ref.size());
  double err = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double q = bf16_bits_to_float(out[i]);
    err = std::max(err, std::isfinite(q) ? std::fabs(bf16_bits_to_float(ref[i]) - q) : INFINITY);
  }
  fmt::print("check: {} experts, grouped wgmma vs per-expert max |diff| {:.3g} ({})\n", m.name, err,
             ops.path("expert_compute"));
  if (!(err <= 2e-2 * max_out)) return false;
  const double flop = 6.0 * double(R) * double(H) * double(I);
  whole = time_it(dev, warmup, iterations, run);
  row(m.name, "expert MLPs, grouped wgmma (activation fused)", *whole, flop);
  Buffer dc = dev.upload(std::vector<int>(counts.begin(), counts.end()));
  Buffer work = dev.alloc(static_cast<std::size_t>(cuda::std_grouped_work_bytes(R, E, H, I)));
  const auto w = cuda::std_grouped_work(work.data(), R, E, H, I);
  const cudaStream_t st = detail::cuda_stream(s);
  const auto* xb = x.as<__nv_bfloat16>();
  auto tiles = [&] {
    cuda::std_grouped_tiles(dc.as<int>(), E, cuda::std_gate_up_blocks(I), cuda::std_down_blocks(H), w.gu, w.gu_max,
                            w.dn, w.dn_max, w.live, st);
  };
  tiles();
  row(m.name, "wgmma tile lists alone", time_it(dev, warmup, iterations, tiles), 0);
  const cuda::StdGroupedVariant chosen = cuda::std_grouped_variant();
  const cuda::StdGroupedVariant variants[] = {chosen,
                                               cuda::parse_grouped_variant("in-place"),
                                               cuda::parse_grouped_variant("pair-order"),
                                               cuda::parse_grouped_variant("whole-tiles"),
                                               cuda::parse_grouped_variant("unpaired+whole-tiles"),
                                               cuda::parse_grouped_variant("at-once")};
  for (const auto& v : variants) {
    cuda::std_grouped_set_variant(v);
    tiles();  // the list order depends on the variant
    const bool is_default = &v == &variants[0];
    const std::string tag = is_default ? "" : " [" + cuda::describe(v) + "]";
    row(m.name, "wgmma gate/up + activation alone" + tag, time_it(dev, warmup, iterations, [&] {
          cuda::std_gate_up_sm90(xb, R, H, w13.as<__nv_bfloat16>(), E, I, act.as<__nv_bfloat16>(), w.gu, w.gu_max,
                                 w.live, m.activation, st);
        }), 4.0 * double(R) * double(H) * double(I));
    row(m.name, "wgmma down alone" + tag, time_it(dev, warmup, iterations, [&] {
          cuda::std_down_sm90(act.as<__nv_bfloat16>(), R, I, wd.as<__nv_bfloat16>(), E, H, y.as<__nv_bfloat16>(), w.dn,
                              w.dn_max, w.live + 1, st);
        }), 2.0 * double(R) * double(H) * double(I));
  }
  cuda::std_grouped_set_variant(chosen);
  half_tile_probe(dev, m, x, w13, act, warmup, iterations);
  return true;
}

// The expert paths on the routed row counts; returns the fastest (or nullopt on a mismatch).
std::optional<StdExpertPath> time_experts(Device& dev, StdOps& ops, const Model& m,
                                          const std::vector<std::int64_t>& counts, int warmup, int iterations) {
  const std::int64_t H = m.hidden, I = m.moe_intermediate, E = m.experts;
  std::int64_t R = 0;
  for (auto c : counts) R += c;
  Buffer x = seeded_bf16(dev, R, H, 4, std::sqrt(3.0f));
  Buffer w13 = seeded_bf16(dev, E * 2 * I, H, 5, std::sqrt(3.0f / float(H)));
  Buffer wd = seeded_bf16(dev, E * H, I, 6, std::sqrt(3.0f / float(I)));
  Buffer gu = dev.alloc(static_cast<std::size_t>(R * 2 * I) * 2), act = dev.alloc(static_cast<std::size_t>(R * I) * 2);
  Buffer y1 = dev.alloc(static_cast<std::size_t>(R * H) * 2), y2 = dev.alloc(static_cast<std::size_t>(R * H) * 2);
  const Stream s = dev.compute_stream();
  auto run = [&](StdExpertPath p, Buffer& y) {
    ops.set_expert_path(p);
    ops.expert_mlp(x.data(), w13.data(), wd.data(), gu.data(), act.data(), y.data(), counts, H, I, m.activation, s);
  };
  run(StdExpertPath::per_expert, y1);
  run(StdExpertPath::grouped, y2);
  const auto a = dev.download<std::uint16_t>(y1.data(), static_cast<std::size_t>(R * H));
  const auto b = dev.download<std::uint16_t>(y2.data(), static_cast<std::size_t>(R * H));
  double err = 0, mx = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double p = bf16_bits_to_float(a[i]), q = bf16_bits_to_float(b[i]);
    err = std::max(err, std::isfinite(q) ? std::fabs(p - q) : INFINITY);
    mx = std::max(mx, std::fabs(p));
  }
  ops.set_expert_path(StdExpertPath::grouped);
  fmt::print("grouped path: {}\n", ops.path("expert_compute"));
  fmt::print("check: {} experts, grouped vs per-expert max |diff| {:.3g} (max |out| {:.3g}) over {} rows\n", m.name, err,
             mx, R);
  if (!(err <= 2e-2 * mx) || !(mx > 0)) return std::nullopt;
  std::int64_t live = 0;
  for (auto c : counts) live += c > 0;
  const double flop = 6.0 * double(R) * double(H) * double(I);
  fmt::print("{}: {} rows over {} experts ({} with rows), max {} per expert, H {}, I {}\n", m.name, R, E, live,
             *std::max_element(counts.begin(), counts.end()), H, I);
  run(StdExpertPath::multi_stream, y2);  // bit for bit the per-expert GEMMs, on 4 streams
  if (dev.download<std::uint16_t>(y2.data(), a.size()) != a) {
    fmt::print(stderr, "error: {}: the multi-stream path differs from the per-expert path\n", m.name);
    return std::nullopt;
  }
  Buffer y3 = dev.alloc(static_cast<std::size_t>(R * H) * 2);
  run(StdExpertPath::padded, y3);
  const auto c3 = dev.download<std::uint16_t>(y3.data(), a.size());
  double perr = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double q = bf16_bits_to_float(c3[i]);
    perr = std::max(perr, std::isfinite(q) ? std::fabs(bf16_bits_to_float(a[i]) - q) : INFINITY);
  }
  fmt::print("check: {} experts, padded batched vs per-expert max |diff| {:.3g}\n", m.name, perr);
  if (!(perr <= 2e-2 * mx)) return std::nullopt;
  const Timing pe = time_it(dev, warmup, iterations, [&] { run(StdExpertPath::per_expert, y1); });
  const Timing gr = time_it(dev, warmup, iterations, [&] { run(StdExpertPath::grouped, y2); });
  const Timing ms = time_it(dev, warmup, iterations, [&] { run(StdExpertPath::multi_stream, y2); });
  row(m.name, "expert MLPs, per-expert cuBLAS + activation", pe, flop);
  row(m.name, "expert MLPs, grouped cuBLAS + activation", gr, flop);
  row(m.name, "expert MLPs, per-expert cuBLAS on 4 streams + activation", ms, flop);
  const Timing pd = time_it(dev, warmup, iterations, [&] { run(StdExpertPath::padded, y3); });
  row(m.name, "expert MLPs, padded batched cuBLAS + activation", pd, flop);
  ActivationSpec none = m.activation;
  row(m.name, "activation kernel alone",
      time_it(dev, warmup, iterations, [&] { ops.glu(gu.data(), act.data(), R, I, none, s); }), 0);
  std::optional<Timing> wg;
  if (!time_wgmma(dev, ops, m, counts, a, mx, x, w13, wd, act, warmup, iterations, wg)) {
    fmt::print(stderr, "error: {}: the grouped wgmma path differs from the per-expert path\n", m.name);
    return std::nullopt;
  }
  std::pair<double, StdExpertPath> best{pe.median, StdExpertPath::per_expert};
  for (const auto& c : {std::pair{gr.median, StdExpertPath::grouped}, std::pair{ms.median, StdExpertPath::multi_stream},
                        std::pair{pd.median, StdExpertPath::padded},
                        std::pair{wg ? wg->median : INFINITY, StdExpertPath::wgmma}})
    if (c.first < best.first) best = c;
  return best.second;
}

}  // namespace

bool route_preset(Device& dev, StdOps& ops, const Model& m, std::int64_t tokens, int warmup, int iterations,
                  std::vector<std::int64_t>& counts) {
  return time_router(dev, ops, m, tokens, warmup, iterations, counts);
}

int run_std_study(const std::vector<std::string>& models, std::int64_t tokens, int warmup, int iterations,
                  const std::string& table, const std::string& counts_dir) {
  auto dev = make_cuda_device(0);
  auto ops = make_cuda_std_ops(*dev);
  std::string tsv = "# layerbench-moe-kernels --models: the faster expert path per shape (same-run medians)\n"
                    "# hidden\tinter\texperts\tpath\n";
  fmt::print("| model | kernel | median ms | min ms | TFLOP/s (median) |\n|---|---|---:|---:|---:|\n");
  for (const auto& name : models) {
    const Model m = preset(name);
    if (m.block != Block::standard) {
      fmt::print("{}: not a standard block (its kernels are the ones above)\n", m.name);
      continue;
    }
    std::vector<std::int64_t> counts;
    if (!time_router(*dev, *ops, m, tokens, warmup, iterations, counts)) return 1;
    const auto best = time_experts(*dev, *ops, m, counts, warmup, iterations);
    if (!best) {
      fmt::print(stderr, "error: {}: the grouped and per-expert expert paths disagree\n", m.name);
      return 1;
    }
    fmt::print("choice: {} experts at H {}, I {}, {} experts: {}\n", m.name, m.hidden, m.moe_intermediate, m.experts,
               to_string(*best));
    tsv += fmt::format("{}\t{}\t{}\t{}\n", m.hidden, m.moe_intermediate, m.experts, to_string(*best));
    if (!counts_dir.empty()) {
      auto f = fmt::output_file(counts_dir + "/counts-" + m.name + ".txt");
      for (auto c : counts) f.print("{}\n", c);
      auto j = fmt::output_file(counts_dir + "/model-" + m.name + ".json");
      j.print("{}\n", json_text(to_json(m), 1));
    }
  }
  if (!table.empty()) {
    auto f = fmt::output_file(table);
    f.print("{}", tsv);
  }
  return 0;
}

}  // namespace layerbench::moe
