// layerbench-moe-kernels --models ... --precision fp8-rowwise: the standard block's expert GEMMs
// with FP8 (e4m3) operands and rowwise scales on one GPU, at each preset's shape and routed row
// counts (the router of tools/std_kernels.cpp at --std-tokens, all experts local).
//   operands  seeded bf16 x (R, h), W13 (E, 2I, h), Wd (E, h, I), quantized on the device
//             (fp8_quantize_rows: per row of x, per output channel of the weights);
//   path      grouped gate/up with the GLU fused (bf16 act), the act rows quantized on the
//             device, grouped down (moe/hopper/fp8_grouped_sm90.cuh);
//   check     before timing, on the outputs poisoned with NaN first: every element of act and y
//             written and finite; the device quantizer against moe/fp8.hpp's bit for bit on
//             sampled rows of x, the act and the sampled experts' weights; act and y of sampled rows
//             (up to 6 experts x 3 rows) against the CPU oracle on the dequantized operands
//             (fp8::grouped_gate_up / grouped_down, double), ||out - ref|| / ||ref|| <= 1e-2 each
//             (what bf16 outputs and FP8 tensor-core accumulation leave; measured values printed);
//   timing    gate/up alone, the act quantization alone, down alone, the three together, gate/up
//             and down in two other launch variants (unpaired whole tiles; pair order), and the
//             BF16 grouped kernels at the same counts beside them; median and min ms, TFLOP/s.
#include "tools/fp8_kernels.hpp"
#include "common/json_text.hpp"

#include "collectives/cuda_internal.hpp"
#include "collectives/types.hpp"
#include "moe/magi2/cuda_kernels.cuh"
#include "moe/fp8.hpp"
#include "moe/hopper/fp8_grouped_sm90.cuh"
#include "moe/init.hpp"
#include "moe/hopper/std_grouped_sm90.cuh"
#include "moe/standard/std_ops.hpp"
#include "tools/std_kernels.hpp"

#include <fmt/core.h>
#include <fmt/os.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace layerbench::moe {

namespace {

void row(const std::string& model, const std::string& what, Timing t, double flop) {
  fmt::print("| {} | {} | {:.4f} | {:.4f} | {} |\n", model, what, t.median, t.min,
             flop > 0 ? fmt::format("{:.1f}", flop / (t.median * 1e-3) * 1e-12) : "");
}

Buffer seeded(Device& dev, std::int64_t rows, std::int64_t cols, std::uint32_t tensor, float scale) {
  Buffer b = dev.alloc(static_cast<std::size_t>(std::max<std::int64_t>(rows * cols, 8)) * 2);
  cuda::fill(b.data(), true,
             {.seed = 17, .tensor = tensor, .scale = scale, .rows = rows, .cols = cols, .full_cols = cols, .ld = cols},
             detail::cuda_stream(dev.compute_stream()));
  return b;
}

const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> t = [] {
    std::array<float, 256> a{};
    for (int v = 0; v < 256; ++v) a[static_cast<std::size_t>(v)] = fp8::e4m3_to_float(static_cast<std::uint8_t>(v));
    return a;
  }();
  return t;
}

// `rows` rows of a quantized matrix from the device: the codes and their scales, dequantized.
struct Rows {
  std::vector<std::uint8_t> q;
  std::vector<float> s, deq;
};
Rows fetch_rows(Device& dev, const Buffer& q, const Buffer& s, std::int64_t row0, std::int64_t rows, std::int64_t cols) {
  Rows r;
  r.q.resize(static_cast<std::size_t>(rows * cols));
  r.s.resize(static_cast<std::size_t>(rows));
  const Stream st = dev.compute_stream();
  dev.copy_to_host(r.q.data(), static_cast<const std::uint8_t*>(q.data()) + row0 * cols, r.q.size(), st);
  dev.copy_to_host(r.s.data(), s.as<float>() + row0, r.s.size() * 4, st);
  dev.synchronize(st);
  const auto& t = e4m3_table();
  r.deq.resize(r.q.size());
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t c = 0; c < cols; ++c)
      r.deq[static_cast<std::size_t>(i * cols + c)] = t[r.q[static_cast<std::size_t>(i * cols + c)]] * r.s[static_cast<std::size_t>(i)];
  return r;
}

// The device's quantization of bf16 rows against the host's (moe/fp8.hpp): mismatching codes or scales.
std::int64_t quant_mismatches(const std::vector<std::uint16_t>& bf, const Rows& r, std::int64_t rows, std::int64_t cols) {
  std::vector<float> f(bf.size());
  for (std::size_t i = 0; i < bf.size(); ++i) f[i] = bf16_bits_to_float(bf[i]);
  const auto h = fp8::quantize(f.data(), 1, rows, cols, fp8::Scaling::rowwise);
  std::int64_t bad = 0;
  for (std::size_t i = 0; i < h.q.size(); ++i) bad += h.q[i] != r.q[i];
  for (std::size_t i = 0; i < h.scales.size(); ++i) bad += h.scales[i] != r.s[i];
  return bad;
}

std::vector<std::uint16_t> fetch_bf16(Device& dev, const Buffer& b, std::int64_t offset, std::int64_t count) {
  return dev.download<std::uint16_t>(static_cast<const std::uint16_t*>(b.data()) + offset, static_cast<std::size_t>(count));
}

std::int64_t non_finite(Device& dev, const Buffer& b, std::int64_t count) {
  const auto v = fetch_bf16(dev, b, 0, count);
  std::int64_t n = 0;
  for (auto x : v) n += (x & 0x7F80u) == 0x7F80u;
  return n;
}

struct Err {
  double num = 0, den = 0, max_abs = 0, max_ref = 0;
  void add(double out, double ref) {
    if (!std::isfinite(out)) num = INFINITY;
    num += (out - ref) * (out - ref);
    den += ref * ref;
    max_abs = std::max(max_abs, std::fabs(out - ref));
    max_ref = std::max(max_ref, std::fabs(ref));
  }
  double rel() const { return den > 0 ? std::sqrt(num / den) : INFINITY; }
};

constexpr double kTolerance = 1e-2;

// Returns false when a check fails.
bool study(Device& dev, const Model& m, const std::vector<std::int64_t>& counts, int warmup, int iterations) {
  const std::int64_t H = m.hidden, I = m.moe_intermediate, E = m.experts;
  std::int64_t R = 0;
  for (auto c : counts) R += c;
  const std::string why = cuda::fp8_grouped_unsupported(H, I, E);
  if (!why.empty()) {
    fmt::print("fp8-rowwise: {}: not run: {}\n", m.name, why);
    return true;
  }
  if (m.activation.kind != Activation::silu_glu && m.activation.kind != Activation::swiglu_clamped) {
    fmt::print("fp8-rowwise: {}: not run: the fused epilogue has SiLU-GLU and clamped SwiGLU only\n", m.name);
    return true;
  }
  const Stream s = dev.compute_stream();
  const cudaStream_t st = detail::cuda_stream(s);
  Buffer xb = seeded(dev, R, H, 4, std::sqrt(3.0f)), w13b = seeded(dev, E * 2 * I, H, 5, std::sqrt(3.0f / float(H))),
         wdb = seeded(dev, E * H, I, 6, std::sqrt(3.0f / float(I)));
  auto bytes = [](std::int64_t n) { return static_cast<std::size_t>(std::max<std::int64_t>(n, 16)); };
  Buffer xq = dev.alloc(bytes(R * H)), xs = dev.alloc(bytes(R) * 4), w13q = dev.alloc(bytes(E * 2 * I * H)),
         w13s = dev.alloc(bytes(E * 2 * I) * 4), wdq = dev.alloc(bytes(E * H * I)), wds = dev.alloc(bytes(E * H) * 4),
         act = dev.alloc(bytes(R * I) * 2), aq = dev.alloc(bytes(R * I)), as = dev.alloc(bytes(R) * 4),
         y = dev.alloc(bytes(R * H) * 2);
  cuda::fp8_quantize_rows(xb.as<__nv_bfloat16>(), R, H, xq.as<std::uint8_t>(), xs.as<float>(), st);
  cuda::fp8_quantize_rows(w13b.as<__nv_bfloat16>(), E * 2 * I, H, w13q.as<std::uint8_t>(), w13s.as<float>(), st);
  cuda::fp8_quantize_rows(wdb.as<__nv_bfloat16>(), E * H, I, wdq.as<std::uint8_t>(), wds.as<float>(), st);
  Buffer dc = dev.upload(std::vector<int>(counts.begin(), counts.end()));
  Buffer work = dev.alloc(static_cast<std::size_t>(cuda::std_grouped_work_bytes(R, E, H, I)));
  const auto w = cuda::std_grouped_work(work.data(), R, E, H, I);
  auto tiles = [&] {
    cuda::std_grouped_tiles(dc.as<int>(), E, cuda::std_gate_up_blocks(I), cuda::std_down_blocks(H), w.gu, w.gu_max,
                            w.dn, w.dn_max, w.live, st);
  };
  auto gate_up = [&] {
    cuda::fp8_gate_up_sm90(xq.as<std::uint8_t>(), xs.as<float>(), R, H, w13q.as<std::uint8_t>(), w13s.as<float>(), E,
                           I, act.as<__nv_bfloat16>(), w.gu, w.gu_max, w.live, m.activation, st);
  };
  auto quant_act = [&] {
    cuda::fp8_quantize_rows(act.as<__nv_bfloat16>(), R, I, aq.as<std::uint8_t>(), as.as<float>(), st);
  };
  auto down = [&] {
    cuda::fp8_down_sm90(aq.as<std::uint8_t>(), as.as<float>(), R, I, wdq.as<std::uint8_t>(), wds.as<float>(), E, H,
                        y.as<__nv_bfloat16>(), w.dn, w.dn_max, w.live + 1, st);
  };
  tiles();
  dev.memset(act.data(), 0xFF, static_cast<std::size_t>(R * I) * 2, s);  // NaN poison: unwritten elements show
  dev.memset(y.data(), 0xFF, static_cast<std::size_t>(R * H) * 2, s);
  gate_up();
  quant_act();
  down();
  dev.synchronize(s);
  const std::int64_t bad_act = non_finite(dev, act, R * I), bad_y = non_finite(dev, y, R * H);
  fmt::print("check: {} fp8-rowwise: non-finite (unwritten) elements: act {} of {}, y {} of {}\n", m.name, bad_act,
             R * I, bad_y, R * H);
  // Sampled experts (first and last with rows, the largest, and spread) and rows (first, middle, last).
  std::vector<std::int64_t> row0(static_cast<std::size_t>(E) + 1, 0), live;
  for (std::int64_t e = 0; e < E; ++e) {
    row0[static_cast<std::size_t>(e) + 1] = row0[static_cast<std::size_t>(e)] + counts[static_cast<std::size_t>(e)];
    if (counts[static_cast<std::size_t>(e)] > 0) live.push_back(e);
  }
  std::vector<std::int64_t> picks;
  if (!live.empty()) {
    for (std::size_t i = 0; i < 5; ++i) picks.push_back(live[i * (live.size() - 1) / 4]);
    picks.push_back(static_cast<std::int64_t>(std::max_element(counts.begin(), counts.end()) - counts.begin()));
    std::sort(picks.begin(), picks.end());
    picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
  }
  Err eg, ed;
  std::int64_t qbad = 0, qchecked = 0, sampled = 0;
  for (const auto e : picks) {
    const std::int64_t c = counts[static_cast<std::size_t>(e)], r0 = row0[static_cast<std::size_t>(e)];
    const Rows w13r = fetch_rows(dev, w13q, w13s, e * 2 * I, 2 * I, H), wdr = fetch_rows(dev, wdq, wds, e * H, H, I);
    qbad += quant_mismatches(fetch_bf16(dev, w13b, e * 2 * I * H, 2 * I * H), w13r, 2 * I, H);
    qbad += quant_mismatches(fetch_bf16(dev, wdb, e * H * I, H * I), wdr, H, I);
    qchecked += 2 * I + H;
    std::vector<std::int64_t> rs{0, c / 2, c - 1};
    rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
    for (const auto i : rs) {
      const std::int64_t r = r0 + i;
      const Rows xr = fetch_rows(dev, xq, xs, r, 1, H), ar = fetch_rows(dev, aq, as, r, 1, I);
      const auto abf = fetch_bf16(dev, act, r * I, I), ybf = fetch_bf16(dev, y, r * H, H);
      qbad += quant_mismatches(fetch_bf16(dev, xb, r * H, H), xr, 1, H) + quant_mismatches(abf, ar, 1, I);
      qchecked += 2;
      const std::vector<std::int64_t> one{1};
      const auto ga = fp8::grouped_gate_up(xr.deq, w13r.deq, one, H, I, m.activation);
      for (std::int64_t k = 0; k < I; ++k) eg.add(bf16_bits_to_float(abf[static_cast<std::size_t>(k)]), ga[static_cast<std::size_t>(k)]);
      const auto yd = fp8::grouped_down(ar.deq, wdr.deq, one, I, H);
      for (std::int64_t k = 0; k < H; ++k) ed.add(bf16_bits_to_float(ybf[static_cast<std::size_t>(k)]), yd[static_cast<std::size_t>(k)]);
      ++sampled;
    }
  }
  fmt::print("check: {} fp8-rowwise: device quantizer vs host (moe/fp8.hpp) on {} rows: {} mismatching codes or "
             "scales\n",
             m.name, qchecked, qbad);
  fmt::print("check: {} fp8-rowwise vs the CPU oracle on the dequantized operands, {} rows of {} experts: gate/up+GLU "
             "||out-ref||/||ref|| {:.3g} (max |diff| {:.3g}, max |ref| {:.3g}); down {:.3g} (max |diff| {:.3g}, max "
             "|ref| {:.3g}); tolerance {:.0e}\n",
             m.name, sampled, picks.size(), eg.rel(), eg.max_abs, eg.max_ref, ed.rel(), ed.max_abs, ed.max_ref,
             kTolerance);
  if (bad_act != 0 || bad_y != 0 || qbad != 0 || sampled == 0 || !(eg.rel() <= kTolerance) ||
      !(ed.rel() <= kTolerance))
    return false;
  const double gu_flop = 4.0 * double(R) * double(H) * double(I), dn_flop = 2.0 * double(R) * double(H) * double(I);
  row(m.name, "fp8-rowwise wgmma gate/up + GLU alone", time_it(dev, warmup, iterations, gate_up), gu_flop);
  row(m.name, "fp8-rowwise act quantization alone", time_it(dev, warmup, iterations, quant_act), 0);
  row(m.name, "fp8-rowwise wgmma down alone", time_it(dev, warmup, iterations, down), dn_flop);
  row(m.name, "fp8-rowwise expert MLPs (gate/up + quantize + down)",
      time_it(dev, warmup, iterations, [&] { gate_up(); quant_act(); down(); }), gu_flop + dn_flop);
  // The launch variants the GPU test checks (tests/moe/hopper/test_fp8_grouped_gpu.cpp), gate/up and down alone.
  const cuda::StdGroupedVariant chosen = cuda::std_grouped_variant();
  for (const char* v : {"unpaired+whole-tiles", "pair-order"}) {
    cuda::std_grouped_set_variant(cuda::parse_grouped_variant(v));
    tiles();  // the list order depends on the variant
    const std::string tag = " [" + cuda::describe(cuda::std_grouped_variant()) + "]";
    row(m.name, "fp8-rowwise wgmma gate/up + GLU alone" + tag, time_it(dev, warmup, iterations, gate_up), gu_flop);
    row(m.name, "fp8-rowwise wgmma down alone" + tag, time_it(dev, warmup, iterations, down), dn_flop);
  }
  cuda::std_grouped_set_variant(chosen);
  tiles();
  if (cuda::std_grouped_sm90_supported(H, I, E)) {  // BF16 at the same counts, same lists
    row(m.name, "bf16 wgmma gate/up + GLU alone", time_it(dev, warmup, iterations, [&] {
          cuda::std_gate_up_sm90(xb.as<__nv_bfloat16>(), R, H, w13b.as<__nv_bfloat16>(), E, I, act.as<__nv_bfloat16>(),
                                 w.gu, w.gu_max, w.live, m.activation, st);
        }), gu_flop);
    row(m.name, "bf16 wgmma down alone", time_it(dev, warmup, iterations, [&] {
          cuda::std_down_sm90(act.as<__nv_bfloat16>(), R, I, wdb.as<__nv_bfloat16>(), E, H, y.as<__nv_bfloat16>(), w.dn,
                              w.dn_max, w.live + 1, st);
        }), dn_flop);
  }
  return true;
}

}  // namespace

int run_fp8_study(const std::vector<std::string>& models, std::int64_t tokens, int warmup, int iterations,
                  const std::string& counts_dir) {
  auto dev = make_cuda_device(0);
  auto ops = make_cuda_std_ops(*dev);
  fmt::print("| model | kernel | median ms | min ms | TFLOP/s (median) |\n|---|---|---:|---:|---:|\n");
  for (const auto& name : models) {
    const Model m = preset(name);
    if (m.block != Block::standard) {
      fmt::print("{}: not a standard block\n", m.name);
      continue;
    }
    std::vector<std::int64_t> counts;
    if (!route_preset(*dev, *ops, m, tokens, warmup, iterations, counts)) return 1;
    if (!counts_dir.empty()) {
      auto f = fmt::output_file(counts_dir + "/counts-" + m.name + ".txt");
      for (auto c : counts) f.print("{}\n", c);
      auto j = fmt::output_file(counts_dir + "/model-" + m.name + ".json");
      j.print("{}\n", json_text(to_json(m), 1));
    }
    if (!study(*dev, m, counts, warmup, iterations)) {
      fmt::print(stderr, "error: {}: the FP8 rowwise expert path failed its checks\n", m.name);
      return 1;
    }
  }
  return 0;
}

}  // namespace layerbench::moe
