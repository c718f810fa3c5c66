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
//   fused     also gate/up with the act quantized in its epilogue (e4m3, one scale per row per 128
//             columns: a rowwise scale needs the row's amax across column blocks of other CTAs)
//             and down on it (moe/hopper/fp8_block_sm90.cuh's kernel promoting every 128 K, rowwise weight
//             scales): its codes and scales = the host's 1x128 quantization of the bf16 act bit for
//             bit, its act against the oracle's GLU (<= 5e-2: e4m3 rounding), its y against the
//             oracle on its own act (<= 1e-2);
//   timing    gate/up alone, the act quantization alone, down alone, the three together, the fused
//             path's two GEMMs alone and together, gate/up and down in three other launch variants
//             (unpaired whole tiles; pair order; staggered warpgroups), and the BF16 grouped kernels at the same counts
//             beside them; median and min ms, TFLOP/s.
#include "tools/fp8_kernels.hpp"
#include "common/json_text.hpp"

#include "collectives/cuda_internal.hpp"
#include "collectives/types.hpp"
#include "moe/magi2/cuda_kernels.cuh"
#include "moe/fp8.hpp"
#include "moe/hopper/fp8_block_sm90.cuh"
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

constexpr double kFusedTolerance = 5e-2;

// The experts the oracle checks sample (first and last with rows, the largest, three spread
// between) and each expert's first row in the grouped layout (row0[e], row0[E] = all rows).
struct SampledExperts {
  std::vector<std::int64_t> row0, picks;
};
SampledExperts sampled_experts(const std::vector<std::int64_t>& counts) {
  SampledExperts out;
  out.row0.assign(counts.size() + 1, 0);
  std::vector<std::int64_t> live;
  for (std::size_t e = 0; e < counts.size(); ++e) {
    out.row0[e + 1] = out.row0[e] + counts[e];
    if (counts[e] > 0) live.push_back(static_cast<std::int64_t>(e));
  }
  if (!live.empty()) {
    for (std::size_t i = 0; i < 5; ++i) out.picks.push_back(live[i * (live.size() - 1) / 4]);
    out.picks.push_back(static_cast<std::int64_t>(std::max_element(counts.begin(), counts.end()) - counts.begin()));
    std::sort(out.picks.begin(), out.picks.end());
    out.picks.erase(std::unique(out.picks.begin(), out.picks.end()), out.picks.end());
  }
  return out;
}

std::int64_t blocks128(std::int64_t n) { return (n + 127) / 128; }

std::vector<float> dequant_rows(const std::vector<std::uint8_t>& q, const std::vector<float>& s, std::int64_t groups,
                                std::int64_t rows, std::int64_t cols, fp8::Scaling sc) {
  fp8::Quantized m;
  m.scaling = sc;
  m.groups = groups;
  m.rows = rows;
  m.cols = cols;
  m.q = q;
  m.scales = s;
  return fp8::dequantize(m);
}

template <class T>
std::vector<T> fetch(Device& dev, const Buffer& b, std::int64_t offset, std::int64_t count) {
  return dev.download<T>(static_cast<const T*>(b.data()) + offset, static_cast<std::size_t>(count));
}

// Device codes and scales of a quantized matrix against the host's quantization of its bf16 source.
std::int64_t block_mismatches(const std::vector<std::uint16_t>& src, const std::vector<std::uint8_t>& q,
                              const std::vector<float>& s, std::int64_t groups, std::int64_t rows, std::int64_t cols,
                              fp8::Scaling sc) {
  std::vector<float> f(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) f[i] = bf16_bits_to_float(src[i]);
  const auto h = fp8::quantize(f.data(), groups, rows, cols, sc);
  std::int64_t bad = 0;
  for (std::size_t i = 0; i < h.q.size(); ++i) bad += h.q[i] != q[i];
  for (std::size_t i = 0; i < h.scales.size(); ++i) bad += h.scales[i] != s[i];
  return bad;
}

int signed_code(std::uint8_t v) { return (v & 0x80u) ? -static_cast<int>(v & 0x7Fu) : static_cast<int>(v & 0x7Fu); }

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
  // The fused path: act quantized 1x128 in gate/up's epilogue, down promoting every 128 K (its
  // own 128-column lists), where the block-scaled kernels take the shape.
  const std::int64_t KI = blocks128(I);
  const bool fused = cuda::fp8_block_unsupported(H, I, E, std::max<std::int64_t>(R, 1)).empty();
  Buffer fq = dev.alloc(bytes(R * I)), fs = dev.alloc(bytes(R * KI) * 4), yq = dev.alloc(bytes(R * H) * 2);
  Buffer bwork = dev.alloc(static_cast<std::size_t>(fused ? cuda::fp8_block_work_bytes(R, E, H, I) : 16));
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
  const auto bw = fused ? cuda::fp8_block_work(bwork.data(), R, E, H, I) : cuda::StdGroupedWork{};
  auto gate_up_q = [&] {
    cuda::fp8_gate_up_q_sm90(xq.as<std::uint8_t>(), xs.as<float>(), R, H, w13q.as<std::uint8_t>(), w13s.as<float>(), E,
                             I, fq.as<std::uint8_t>(), fs.as<float>(), w.gu, w.gu_max, w.live, m.activation, st);
  };
  auto down_q = [&] {
    cuda::fp8_rowwise_down_1x128_sm90(fq.as<std::uint8_t>(), fs.as<float>(), R, I, wdq.as<std::uint8_t>(),
                                      wds.as<float>(), E, H, yq.as<__nv_bfloat16>(), bw.dn, bw.dn_max, bw.live + 1, st);
  };
  tiles();
  if (fused) cuda::fp8_block_tiles(dc.as<int>(), E, H, I, bw, st);
  dev.memset(act.data(), 0xFF, static_cast<std::size_t>(R * I) * 2, s);  // NaN poison: unwritten elements show
  dev.memset(y.data(), 0xFF, static_cast<std::size_t>(R * H) * 2, s);
  dev.memset(yq.data(), 0xFF, static_cast<std::size_t>(R * H) * 2, s);
  dev.memset(fq.data(), 0x7F, static_cast<std::size_t>(R * I), s);  // e4m3 NaN
  dev.memset(fs.data(), 0xFF, static_cast<std::size_t>(R * KI) * 4, s);
  gate_up();
  quant_act();
  down();
  if (fused) {
    gate_up_q();
    down_q();
  }
  dev.synchronize(s);
  const std::int64_t bad_act = non_finite(dev, act, R * I), bad_y = non_finite(dev, y, R * H);
  std::int64_t bad_fq = 0, bad_fs = 0, bad_yq = 0;
  if (fused) {
    for (auto v : fetch<std::uint8_t>(dev, fq, 0, R * I)) bad_fq += (v & 0x7Fu) == 0x7Fu;
    for (auto v : fetch<float>(dev, fs, 0, R * KI)) bad_fs += !std::isfinite(v);
    bad_yq = non_finite(dev, yq, R * H);
  }
  fmt::print("check: {} fp8-rowwise: non-finite (unwritten) elements: act {} of {}, y {} of {}; fused 1x128 act: "
             "codes {}, scales {}, y {}{}\n",
             m.name, bad_act, R * I, bad_y, R * H, bad_fq, bad_fs, bad_yq, fused ? "" : " (fused path not run)");
  const auto [row0, picks] = sampled_experts(counts);
  Err eg, ed, ef, edq;
  std::int64_t qbad = 0, qchecked = 0, sampled = 0, fbad = 0;
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
      if (fused) {  // the fused codes and scales = the host's 1x128 quantization of the bf16 act, bit for bit
        const auto fc = fetch<std::uint8_t>(dev, fq, r * I, I);
        const auto fsc = fetch<float>(dev, fs, r * KI, KI);
        fbad += block_mismatches(abf, fc, fsc, 1, 1, I, fp8::Scaling::block_1x128);
        const auto fd = dequant_rows(fc, fsc, 1, 1, I, fp8::Scaling::block_1x128);
        for (std::int64_t k = 0; k < I; ++k) ef.add(fd[static_cast<std::size_t>(k)], ga[static_cast<std::size_t>(k)]);
        const auto yqd = fp8::grouped_down(fd, wdr.deq, one, I, H);
        const auto yqbf = fetch_bf16(dev, yq, r * H, H);
        for (std::int64_t k = 0; k < H; ++k)
          edq.add(bf16_bits_to_float(yqbf[static_cast<std::size_t>(k)]), yqd[static_cast<std::size_t>(k)]);
      }
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
  if (fused)
    fmt::print("check: {} fp8-rowwise fused 1x128 act quantization: codes or scales off the host's 1x128 quantization "
               "of the bf16 act: {}; e4m3 act vs the oracle's GLU {:.3g} (tolerance {:.0e}); down (promoted every 128 "
               "K) on it vs the oracle {:.3g} (tolerance {:.0e})\n",
               m.name, fbad, ef.rel(), kFusedTolerance, edq.rel(), kTolerance);
  if (bad_act != 0 || bad_y != 0 || qbad != 0 || sampled == 0 || !(eg.rel() <= kTolerance) ||
      !(ed.rel() <= kTolerance))
    return false;
  if (fused && (bad_fq != 0 || bad_fs != 0 || bad_yq != 0 || fbad != 0 || !(ef.rel() <= kFusedTolerance) ||
                !(edq.rel() <= kTolerance)))
    return false;
  const double gu_flop = 4.0 * double(R) * double(H) * double(I), dn_flop = 2.0 * double(R) * double(H) * double(I);
  row(m.name, "fp8-rowwise wgmma gate/up + GLU alone", time_it(dev, warmup, iterations, gate_up), gu_flop);
  row(m.name, "fp8-rowwise act quantization alone", time_it(dev, warmup, iterations, quant_act), 0);
  row(m.name, "fp8-rowwise wgmma down alone", time_it(dev, warmup, iterations, down), dn_flop);
  row(m.name, "fp8-rowwise expert MLPs (gate/up + quantize + down)",
      time_it(dev, warmup, iterations, [&] { gate_up(); quant_act(); down(); }), gu_flop + dn_flop);
  if (fused) {
    row(m.name, "fp8-rowwise wgmma gate/up + GLU + e4m3 1x128 quantization fused alone",
        time_it(dev, warmup, iterations, gate_up_q), gu_flop);
    row(m.name, "fp8-rowwise wgmma down on the 1x128 act (promoted every 128 K) alone",
        time_it(dev, warmup, iterations, down_q), dn_flop);
    row(m.name, "fp8-rowwise expert MLPs (gate/up fused 1x128 quantization + down)",
        time_it(dev, warmup, iterations, [&] { gate_up_q(); down_q(); }), gu_flop + dn_flop);
  }
  // The launch variants the GPU test checks (tests/moe/hopper/test_fp8_grouped_gpu.cpp), gate/up and down alone.
  const cuda::StdGroupedVariant chosen = cuda::std_grouped_variant();
  for (const char* v : {"unpaired+whole-tiles", "pair-order", "staggered"}) {
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


// --precision fp8-block: DeepSeek-V3's recipe (moe/hopper/fp8_block_sm90.cuh). Operands: the same seeded
// bf16 x, W13, Wd as the rowwise study, quantized on the device (x 1x128, W13 128x128 per gate /
// up matrix, Wd 128x128). Two paths: A = gate/up + GLU (bf16 act), act quantized 1x128 in a
// separate pass, down; B = gate/up + GLU quantized to e4m3 + 1x128 scales in the epilogue, down.
// Checks (before timing, outputs poisoned first): every element written and finite; the device
// quantizers against moe/fp8.hpp bit for bit (sampled rows of x and act, W13 and Wd of the first
// and last sampled experts); against the CPU oracle on the dequantized operands (double), sampled rows:
// A's act and y, B's y on B's own act, tolerance 1e-2 each; B's act (e4m3, dequantized) against
// the oracle's GLU output, tolerance 5e-2 (e4m3's own rounding, 3 mantissa bits, is ~2.5% rms);
// and B's codes and scales against the host's 1x128 quantization of A's bf16 act: scales within
// 2^-8 relative, codes at most one step apart (the only difference: B quantizes the fp32 GLU
// value, A its bf16 rounding).
bool study_block(Device& dev, const Model& m, const std::vector<std::int64_t>& counts, int warmup, int iterations) {
  const std::int64_t H = m.hidden, I = m.moe_intermediate, E = m.experts;
  std::int64_t R = 0;
  for (auto c : counts) R += c;
  const std::string why = cuda::fp8_block_unsupported(H, I, E, std::max<std::int64_t>(R, 1));
  if (!why.empty()) {
    fmt::print("fp8-block: {}: not run: {}\n", m.name, why);
    return true;
  }
  if (m.activation.kind != Activation::silu_glu && m.activation.kind != Activation::swiglu_clamped) {
    fmt::print("fp8-block: {}: not run: the fused epilogue has SiLU-GLU and clamped SwiGLU only\n", m.name);
    return true;
  }
  const std::int64_t KH = blocks128(H), KI = blocks128(I);
  const Stream s = dev.compute_stream();
  const cudaStream_t st = detail::cuda_stream(s);
  Buffer xb = seeded(dev, R, H, 4, std::sqrt(3.0f)), w13b = seeded(dev, E * 2 * I, H, 5, std::sqrt(3.0f / float(H))),
         wdb = seeded(dev, E * H, I, 6, std::sqrt(3.0f / float(I)));
  auto bytes = [](std::int64_t n) { return static_cast<std::size_t>(std::max<std::int64_t>(n, 16)); };
  Buffer xq = dev.alloc(bytes(R * H)), xs = dev.alloc(bytes(R * KH) * 4), w13q = dev.alloc(bytes(E * 2 * I * H)),
         w13s = dev.alloc(bytes(2 * E * KI * KH) * 4), wdq = dev.alloc(bytes(E * H * I)),
         wds = dev.alloc(bytes(E * KH * KI) * 4), act = dev.alloc(bytes(R * I) * 2), aq = dev.alloc(bytes(R * I)),
         as = dev.alloc(bytes(R * KI) * 4), fq = dev.alloc(bytes(R * I)), fs = dev.alloc(bytes(R * KI) * 4),
         y = dev.alloc(bytes(R * H) * 2), yf = dev.alloc(bytes(R * H) * 2);
  cuda::fp8_quantize_1x128(xb.as<__nv_bfloat16>(), R, H, xq.as<std::uint8_t>(), xs.as<float>(), st);
  cuda::fp8_quantize_128x128(w13b.as<__nv_bfloat16>(), 2 * E, I, H, w13q.as<std::uint8_t>(), w13s.as<float>(), st);
  cuda::fp8_quantize_128x128(wdb.as<__nv_bfloat16>(), E, H, I, wdq.as<std::uint8_t>(), wds.as<float>(), st);
  Buffer dc = dev.upload(std::vector<int>(counts.begin(), counts.end()));
  Buffer work = dev.alloc(static_cast<std::size_t>(cuda::fp8_block_work_bytes(R, E, H, I)));
  const auto w = cuda::fp8_block_work(work.data(), R, E, H, I);
  auto tiles = [&] { cuda::fp8_block_tiles(dc.as<int>(), E, H, I, w, st); };
  auto gate_up = [&] {
    cuda::fp8_block_gate_up_sm90(xq.as<std::uint8_t>(), xs.as<float>(), R, H, w13q.as<std::uint8_t>(),
                                 w13s.as<float>(), E, I, act.as<__nv_bfloat16>(), nullptr, nullptr, w.gu, w.gu_max,
                                 w.live, m.activation, st);
  };
  auto quant_act = [&] {
    cuda::fp8_quantize_1x128(act.as<__nv_bfloat16>(), R, I, aq.as<std::uint8_t>(), as.as<float>(), st);
  };
  auto down = [&] {
    cuda::fp8_block_down_sm90(aq.as<std::uint8_t>(), as.as<float>(), R, I, wdq.as<std::uint8_t>(), wds.as<float>(), E,
                              H, y.as<__nv_bfloat16>(), w.dn, w.dn_max, w.live + 1, st);
  };
  auto gate_up_q = [&] {
    cuda::fp8_block_gate_up_sm90(xq.as<std::uint8_t>(), xs.as<float>(), R, H, w13q.as<std::uint8_t>(),
                                 w13s.as<float>(), E, I, nullptr, fq.as<std::uint8_t>(), fs.as<float>(), w.gu,
                                 w.gu_max, w.live, m.activation, st);
  };
  auto down_f = [&] {
    cuda::fp8_block_down_sm90(fq.as<std::uint8_t>(), fs.as<float>(), R, I, wdq.as<std::uint8_t>(), wds.as<float>(), E,
                              H, yf.as<__nv_bfloat16>(), w.dn, w.dn_max, w.live + 1, st);
  };
  tiles();
  dev.memset(act.data(), 0xFF, static_cast<std::size_t>(R * I) * 2, s);  // NaN poison: unwritten elements show
  dev.memset(y.data(), 0xFF, static_cast<std::size_t>(R * H) * 2, s);
  dev.memset(yf.data(), 0xFF, static_cast<std::size_t>(R * H) * 2, s);
  dev.memset(fq.data(), 0x7F, static_cast<std::size_t>(R * I), s);  // e4m3 NaN
  dev.memset(fs.data(), 0xFF, static_cast<std::size_t>(R * KI) * 4, s);
  gate_up();
  quant_act();
  down();
  gate_up_q();
  down_f();
  dev.synchronize(s);
  std::int64_t bad_fq = 0, bad_fs = 0;
  for (auto v : fetch<std::uint8_t>(dev, fq, 0, R * I)) bad_fq += (v & 0x7Fu) == 0x7Fu;
  for (auto v : fetch<float>(dev, fs, 0, R * KI)) bad_fs += !std::isfinite(v);
  const std::int64_t bad_act = non_finite(dev, act, R * I), bad_y = non_finite(dev, y, R * H),
                     bad_yf = non_finite(dev, yf, R * H);
  fmt::print("check: {} fp8-block: non-finite (unwritten) elements: act {} of {}, y {} of {}; fused: act codes {} of "
             "{}, act scales {} of {}, y {} of {}\n",
             m.name, bad_act, R * I, bad_y, R * H, bad_fq, R * I, bad_fs, R * KI, bad_yf, R * H);
  const auto [row0, picks] = sampled_experts(counts);
  Err eg, ed, ef, edf;
  std::int64_t qbad = 0, qchecked = 0, sampled = 0, fused_bad = 0;
  const auto row_scaling = fp8::Scaling::block_1x128, blk = fp8::Scaling::block_128x128;
  for (const auto e : picks) {
    const std::int64_t c = counts[static_cast<std::size_t>(e)], r0 = row0[static_cast<std::size_t>(e)];
    const auto w13c = fetch<std::uint8_t>(dev, w13q, e * 2 * I * H, 2 * I * H);
    const auto w13sc = fetch<float>(dev, w13s, 2 * e * KI * KH, 2 * KI * KH);
    const auto wdc = fetch<std::uint8_t>(dev, wdq, e * H * I, H * I);
    const auto wdsc = fetch<float>(dev, wds, e * KH * KI, KH * KI);
    if (e == picks.front() || e == picks.back()) {  // the weight quantizer on two experts (host time)
      qbad += block_mismatches(fetch_bf16(dev, w13b, e * 2 * I * H, 2 * I * H), w13c, w13sc, 2, I, H, blk);
      qbad += block_mismatches(fetch_bf16(dev, wdb, e * H * I, H * I), wdc, wdsc, 1, H, I, blk);
      qchecked += 2 * I + H;
    }
    const auto w13d = dequant_rows(w13c, w13sc, 2, I, H, blk), wdd = dequant_rows(wdc, wdsc, 1, H, I, blk);
    std::vector<std::int64_t> rs{0, c / 2, c - 1};
    rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
    for (const auto i : rs) {
      const std::int64_t r = r0 + i;
      const auto xc = fetch<std::uint8_t>(dev, xq, r * H, H);
      const auto xsc = fetch<float>(dev, xs, r * KH, KH);
      qbad += block_mismatches(fetch_bf16(dev, xb, r * H, H), xc, xsc, 1, 1, H, row_scaling);
      const auto abf = fetch_bf16(dev, act, r * I, I);
      const auto ac = fetch<std::uint8_t>(dev, aq, r * I, I);
      const auto asc = fetch<float>(dev, as, r * KI, KI);
      qbad += block_mismatches(abf, ac, asc, 1, 1, I, row_scaling);
      qchecked += 2;
      const std::vector<std::int64_t> one{1};
      const auto ga = fp8::grouped_gate_up(dequant_rows(xc, xsc, 1, 1, H, row_scaling), w13d, one, H, I, m.activation);
      for (std::int64_t k = 0; k < I; ++k)
        eg.add(bf16_bits_to_float(abf[static_cast<std::size_t>(k)]), ga[static_cast<std::size_t>(k)]);
      const auto yd = fp8::grouped_down(dequant_rows(ac, asc, 1, 1, I, row_scaling), wdd, one, I, H);
      const auto ybf = fetch_bf16(dev, y, r * H, H), yfbf = fetch_bf16(dev, yf, r * H, H);
      for (std::int64_t k = 0; k < H; ++k)
        ed.add(bf16_bits_to_float(ybf[static_cast<std::size_t>(k)]), yd[static_cast<std::size_t>(k)]);
      // The fused path: its act against the oracle and against the host's quantization of A's act.
      const auto fc = fetch<std::uint8_t>(dev, fq, r * I, I);
      const auto fsc = fetch<float>(dev, fs, r * KI, KI);
      const auto fd = dequant_rows(fc, fsc, 1, 1, I, row_scaling);
      for (std::int64_t k = 0; k < I; ++k) ef.add(fd[static_cast<std::size_t>(k)], ga[static_cast<std::size_t>(k)]);
      std::vector<float> af(abf.size());
      for (std::size_t k = 0; k < abf.size(); ++k) af[k] = bf16_bits_to_float(abf[k]);
      const auto hq = fp8::quantize(af.data(), 1, 1, I, row_scaling);
      for (std::int64_t k = 0; k < I; ++k)
        fused_bad += std::abs(signed_code(fc[static_cast<std::size_t>(k)]) - signed_code(hq.q[static_cast<std::size_t>(k)])) > 1;
      for (std::int64_t g = 0; g < KI; ++g)
        fused_bad += !(std::fabs(fsc[static_cast<std::size_t>(g)] - hq.scales[static_cast<std::size_t>(g)]) <=
                       hq.scales[static_cast<std::size_t>(g)] * 0x1p-8f);
      const auto yfd = fp8::grouped_down(fd, wdd, one, I, H);
      for (std::int64_t k = 0; k < H; ++k)
        edf.add(bf16_bits_to_float(yfbf[static_cast<std::size_t>(k)]), yfd[static_cast<std::size_t>(k)]);
      ++sampled;
    }
  }
  fmt::print("check: {} fp8-block: device quantizers (1x128, 128x128) vs host (moe/fp8.hpp) on {} rows: {} "
             "mismatching codes or scales\n",
             m.name, qchecked, qbad);
  fmt::print("check: {} fp8-block vs the CPU oracle on the dequantized operands, {} rows of {} experts: gate/up+GLU "
             "(bf16) ||out-ref||/||ref|| {:.3g} (max |diff| {:.3g}, max |ref| {:.3g}); down {:.3g} (max |diff| {:.3g}, "
             "max |ref| {:.3g}); tolerance {:.0e}\n",
             m.name, sampled, picks.size(), eg.rel(), eg.max_abs, eg.max_ref, ed.rel(), ed.max_abs, ed.max_ref,
             kTolerance);
  fmt::print("check: {} fp8-block fused act quantization: e4m3 act vs the oracle's GLU {:.3g} (tolerance {:.0e}); "
             "down on it {:.3g} (tolerance {:.0e}); codes more than one step from / scales off the host's 1x128 "
             "quantization of the bf16 act: {}\n",
             m.name, ef.rel(), kFusedTolerance, edf.rel(), kTolerance, fused_bad);
  if (bad_act != 0 || bad_y != 0 || bad_yf != 0 || bad_fq != 0 || bad_fs != 0 || qbad != 0 || fused_bad != 0 ||
      sampled == 0 || !(eg.rel() <= kTolerance) || !(ed.rel() <= kTolerance) || !(ef.rel() <= kFusedTolerance) ||
      !(edf.rel() <= kTolerance))
    return false;
  const double gu_flop = 4.0 * double(R) * double(H) * double(I), dn_flop = 2.0 * double(R) * double(H) * double(I);
  row(m.name, "fp8-block wgmma gate/up + GLU (bf16 act) alone", time_it(dev, warmup, iterations, gate_up), gu_flop);
  row(m.name, "fp8-block act quantization 1x128 alone", time_it(dev, warmup, iterations, quant_act), 0);
  row(m.name, "fp8-block wgmma down alone", time_it(dev, warmup, iterations, down), dn_flop);
  row(m.name, "fp8-block expert MLPs (gate/up + quantize + down)",
      time_it(dev, warmup, iterations, [&] { gate_up(); quant_act(); down(); }), gu_flop + dn_flop);
  row(m.name, "fp8-block wgmma gate/up + GLU + e4m3 quantization fused alone", time_it(dev, warmup, iterations, gate_up_q),
      gu_flop);
  row(m.name, "fp8-block expert MLPs (gate/up fused quantization + down)",
      time_it(dev, warmup, iterations, [&] { gate_up_q(); down_f(); }), gu_flop + dn_flop);
  // The variants the GPU test checks beside the default: single CTAs (no weight multicast), and the
  // consumer warpgroups' schedules (staggered; taking turns to issue).
  const cuda::StdGroupedVariant chosen = cuda::std_grouped_variant();
  for (const char* v : {"unpaired", "staggered", "ordered"}) {
    cuda::std_grouped_set_variant(cuda::parse_grouped_variant(v));
    const std::string tag = std::string(" [") + v + "]";
    row(m.name, "fp8-block wgmma gate/up + GLU + e4m3 quantization fused alone" + tag,
        time_it(dev, warmup, iterations, gate_up_q), gu_flop);
    row(m.name, "fp8-block wgmma down alone" + tag, time_it(dev, warmup, iterations, down), dn_flop);
  }
  cuda::std_grouped_set_variant(chosen);
  return true;
}
}  // namespace

int run_fp8_study(const std::vector<std::string>& models, std::int64_t tokens, int warmup, int iterations,
                  const std::string& counts_dir, bool block) {
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
    if (!(block ? study_block(*dev, m, counts, warmup, iterations) : study(*dev, m, counts, warmup, iterations))) {
      fmt::print(stderr, "error: {}: the FP8 {} expert path failed its checks\n", m.name, block ? "block-scaled" : "rowwise");
      return 1;
    }
  }
  return 0;
}

}  // namespace layerbench::moe
