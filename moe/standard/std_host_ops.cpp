// Host primitives of the standard MoE block: fp32, plain loops in a fixed order (the block's
// numerical reference; the CPU oracle in moe/standard/std_reference.cpp repeats the same order).
#include "collectives/error.hpp"
#include "common/input_file.hpp"
#include "moe/config/router.hpp"
#include "moe/standard/std_ops.hpp"

#include "common/usage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <cstring>
#include <vector>

namespace layerbench::moe {

namespace {

class HostStdOps final : public StdOps {
 public:
  HostStdOps() : dense_(make_host_dense_ops()) {}
  DenseOps& dense() override { return *dense_; }

  void logits(const void* x, const void* w, float* out, std::int64_t n, std::int64_t h, std::int64_t e,
              Stream) override {
    const auto* X = static_cast<const float*>(x);
    const auto* W = static_cast<const float*>(w);
    for (std::int64_t t = 0; t < n; ++t)
      for (std::int64_t j = 0; j < e; ++j) {
        float acc = 0;
        for (std::int64_t q = 0; q < h; ++q) acc += X[t * h + q] * W[j * h + q];
        out[t * e + j] = acc;
      }
  }
  void route(const float* logits, const float* bias, const RouterSpec& spec, std::int64_t n, std::int64_t e,
             std::int64_t k, std::int32_t* idx, float* weight, Stream) override {
    std::vector<float> work(static_cast<std::size_t>(3 * e));
    for (std::int64_t t = 0; t < n; ++t) (void)route_token(logits + t * e, bias, spec, e, k, idx + t * k, weight + t * k, work);
  }
  void gather_rows(const void* src, const std::int32_t* map, void* dst, std::int64_t rows, std::int64_t h,
                   Stream) override {
    for (std::int64_t i = 0; i < rows; ++i)
      std::memcpy(static_cast<float*>(dst) + i * h, static_cast<const float*>(src) + std::int64_t{map[i]} * h,
                  static_cast<std::size_t>(h) * 4);
  }
  void scatter_rows(const void* src, const std::int32_t* map, void* dst, std::int64_t rows, std::int64_t h,
                    Stream) override {
    for (std::int64_t i = 0; i < rows; ++i)
      std::memcpy(static_cast<float*>(dst) + std::int64_t{map[i]} * h, static_cast<const float*>(src) + i * h,
                  static_cast<std::size_t>(h) * 4);
  }
  void glu(const void* in, void* out, std::int64_t m, std::int64_t inter, const ActivationSpec& a, Stream) override {
    const auto* x = static_cast<const float*>(in);
    auto* y = static_cast<float*>(out);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t c = 0; c < inter; ++c) y[i * inter + c] = moe::glu(x[i * 2 * inter + c], x[i * 2 * inter + inter + c], a);
  }
  void combine(const void* rows, const std::int32_t* slot, const float* weight, void* out, std::int64_t n,
               std::int64_t k, std::int64_t h, Stream) override {
    const auto* r = static_cast<const float*>(rows);
    auto* o = static_cast<float*>(out);
    for (std::int64_t t = 0; t < n; ++t)
      for (std::int64_t q = 0; q < h; ++q) {
        float acc = 0;
        for (std::int64_t j = 0; j < k; ++j) acc += weight[t * k + j] * r[std::int64_t{slot[t * k + j]} * h + q];
        o[t * h + q] = acc;
      }
  }
  void gate_scale(void* y, const float* g, std::int64_t n, std::int64_t h, Stream) override {
    auto* o = static_cast<float*>(y);
    for (std::int64_t t = 0; t < n; ++t) {
      const float s = 1.0f / (1.0f + std::exp(-g[t]));
      for (std::int64_t q = 0; q < h; ++q) o[t * h + q] *= s;
    }
  }
  std::string path(std::string_view c) const override {
    if (c == "ep_counts_exchange") return "MPI all-to-all of int64 counts";
    if (c == "ep_dispatch" || c == "ep_combine") return "MPI all-to-allv";
    return "host fp32 loops";
  }

 private:
  std::unique_ptr<DenseOps> dense_;
};

}  // namespace

std::string_view to_string(StdExpertPath p) {
  switch (p) {
    case StdExpertPath::automatic: return "automatic";
    case StdExpertPath::per_expert: return "per-expert";
    case StdExpertPath::grouped: return "grouped";
    case StdExpertPath::multi_stream: return "multi-stream";
    case StdExpertPath::padded: return "padded";
    case StdExpertPath::wgmma: return "wgmma";
  }
  return "?";
}

StdExpertPath default_expert_path(bool wgmma_ok, std::int64_t experts, const std::vector<std::int64_t>& rows) {
  if (wgmma_ok) return StdExpertPath::wgmma;
  if (experts <= kFewLocalExperts) return StdExpertPath::per_expert;
  std::int64_t total = 0, most = 0;
  for (auto r : rows) total += r, most = std::max(most, r);
  const bool even = total > 0 && double(most) * double(rows.size()) <= kMaxPaddedWaste * double(total);
  return even ? StdExpertPath::padded : StdExpertPath::multi_stream;
}

std::string default_expert_path_reason(bool wgmma_ok, std::int64_t experts) {
  const std::string measured = " (the fastest measured, results/moe/2026-12-06-h100-a)";
  if (wgmma_ok) return "the device's default: the grouped wgmma kernels" + measured;
  if (experts <= kFewLocalExperts)
    return "the device's default without the wgmma kernels (they need compute capability 9.0, hidden and "
           "intermediate multiples of 8): one cuBLAS GEMM per expert at <= 16 local experts" + measured;
  return "the device's default without the wgmma kernels (they need compute capability 9.0, hidden and "
         "intermediate multiples of 8): per call, the padded batched GEMM when padding to the largest expert "
         "costs at most 1.5x the rows, else per-expert GEMMs over 4 streams" + measured;
}

void StdOps::expert_mlp(const void* x, const void* w13, const void* wd, void* gu, void* act, void* y,
                        const std::vector<std::int64_t>& rows, std::int64_t h, std::int64_t inter,
                        const ActivationSpec& a, Stream s) {
  DenseOps& o = dense();
  const std::size_t es = dtype_size(this->act());
  auto at = [es](const void* b, std::int64_t elems) {
    return const_cast<char*>(static_cast<const char*>(b)) + static_cast<std::size_t>(elems) * es;
  };
  std::int64_t off = 0, total = 0;
  for (std::size_t e = 0; e < rows.size(); ++e) {  // experts with no row are skipped
    const std::int64_t n = rows[e];
    if (n > 0)
      o.linear(at(x, off * h), at(w13, static_cast<std::int64_t>(e) * 2 * inter * h), at(gu, off * 2 * inter),
               {.m = n, .n = 2 * inter, .k = h, .lda = h, .ldw = h, .ldc = 2 * inter}, false, s);
    off += n;
  }
  total = off;
  glu(gu, act, total, inter, a, s);
  off = 0;
  for (std::size_t e = 0; e < rows.size(); ++e) {
    const std::int64_t n = rows[e];
    if (n > 0)
      o.linear(at(act, off * inter), at(wd, static_cast<std::int64_t>(e) * h * inter), at(y, off * h),
               {.m = n, .n = h, .k = inter, .lda = inter, .ldw = inter, .ldc = h}, false, s);
    off += n;
  }
}

void load_expert_table(StdOps& ops, const std::string& path) {
  // The input layer: a directory, FIFO, device or oversized file is refused naming it.
  if (input::kind_of(path) != input::Kind::missing) input::check_file(input::Origin{"--expert-table", path}, input::kMaxConfigBytes);
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("--expert-table: cannot read '{}'", path));
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::int64_t h = 0, inter = 0, experts = 0;
    std::string p;
    if (!(ss >> h >> inter >> experts >> p) || h <= 0 || inter <= 0 || experts <= 0 ||
        (p != "grouped" && p != "per-expert" && p != "multi-stream" && p != "padded" && p != "wgmma"))
      throw UsageError(fmt::format(
          "--expert-table {} line {}: expected 'hidden inter experts grouped|per-expert|multi-stream|padded|wgmma'", path, no));
    ops.set_expert_choice(h, inter, experts,
                          p == "grouped"        ? StdExpertPath::grouped
                          : p == "multi-stream" ? StdExpertPath::multi_stream
                          : p == "padded"       ? StdExpertPath::padded
                          : p == "wgmma"        ? StdExpertPath::wgmma
                                                : StdExpertPath::per_expert);
  }
}

std::unique_ptr<StdOps> make_host_std_ops() { return std::make_unique<HostStdOps>(); }

#if !defined(LAYERBENCH_HAVE_CUDA)
std::unique_ptr<StdOps> make_cuda_std_ops(Device&) {
  throw UsageError("this build has no CUDA support (use --backend host)");
}
#endif

}  // namespace layerbench::moe
