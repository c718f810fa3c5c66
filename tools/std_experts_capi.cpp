// liblayerbench_std_experts (tools/std_experts_capi.h): the standard block's expert MLPs through
// StdOps::expert_mlp of the CUDA backend (moe/standard/std_cuda_ops.cu, moe/standard/std_expert_paths.cu), on the
// caller's buffers and stream. Everything is validated here, once; the device state is made on
// the first run.
#include "tools/std_experts_capi.h"

#include "collectives/device.hpp"
#include "common/usage.hpp"
#include "moe/config/model.hpp"
#include "moe/hopper/std_grouped_sm90.cuh"
#include "moe/standard/std_ops.hpp"
#include "tools/capi_guard.hpp"

#include <cuda_runtime.h>
#include <fmt/core.h>

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

struct lbse_handle {
  layerbench::moe::Model model;
  layerbench::moe::StdExpertPath path = layerbench::moe::StdExpertPath::automatic;
  std::string table;
  std::string variant_words;  // "wgmma:<modifiers>": the grouped kernels' launch variant for this handle
  std::optional<layerbench::moe::cuda::StdGroupedVariant> variant;
  std::unique_ptr<layerbench::Device> dev;
  std::unique_ptr<layerbench::moe::StdOps> ops;
  layerbench::Buffer gu, act;  // gate/up (R, 2I) and activation (R, I) workspaces of the cuBLAS paths
  std::int64_t rows_cap = 0;
  int ordinal = -1;
  std::vector<std::int64_t> counts;
  std::string text;  // what lbse_path / lbse_describe return
};

namespace {

using layerbench::UsageError;
using layerbench::moe::StdExpertPath;

thread_local std::string last_error;

template <class F>
int guarded(F&& body) {
  return layerbench::capi::guarded(last_error, std::forward<F>(body));
}

StdExpertPath parse_path(const char* name) {
  const std::string n = name ? name : "";
  for (auto p : {StdExpertPath::automatic, StdExpertPath::per_expert, StdExpertPath::grouped,
                 StdExpertPath::multi_stream, StdExpertPath::padded, StdExpertPath::wgmma})
    if (n == layerbench::moe::to_string(p)) return p;
  throw UsageError(fmt::format(
      "path '{}': expected automatic, per-expert, grouped, multi-stream, padded or wgmma", n));
}

void check_run(const lbse_handle* h, const void* x, const void* w13, const void* wd, const void* y,
               const std::int64_t* counts, std::int64_t experts, std::int64_t rows) {
  if (!h) throw UsageError("lbse_run: no handle");
  const auto& m = h->model;
  if (experts != m.experts)
    throw UsageError(fmt::format("lbse_run: {} experts, the handle's preset {} has {}", experts, m.name, m.experts));
  if (!counts) throw UsageError("lbse_run: no counts");
  std::int64_t total = 0;
  for (std::int64_t e = 0; e < experts; ++e) {
    if (counts[e] < 0) throw UsageError(fmt::format("lbse_run: counts[{}] = {} is negative", e, counts[e]));
    total += counts[e];
  }
  if (rows < 0 || total != rows)
    throw UsageError(fmt::format("lbse_run: rows {} but the counts sum to {}", rows, total));
  if (!w13 || !wd || (rows > 0 && (!x || !y))) throw UsageError("lbse_run: a null buffer");
}

// The handle's launch variant of the grouped kernels for one run; the previous one back after.
class VariantScope {
 public:
  explicit VariantScope(const std::optional<layerbench::moe::cuda::StdGroupedVariant>& v)
      : before_(layerbench::moe::cuda::std_grouped_variant()) {
    if (v) layerbench::moe::cuda::std_grouped_set_variant(*v);
  }
  ~VariantScope() { layerbench::moe::cuda::std_grouped_set_variant(before_); }
  VariantScope(const VariantScope&) = delete;
  VariantScope& operator=(const VariantScope&) = delete;

 private:
  layerbench::moe::cuda::StdGroupedVariant before_;
};

// The device state on the current device, made on the first run (the table read into the ops).
void ensure_device(lbse_handle& h) {
  int cur = 0;
  if (cudaGetDevice(&cur) != cudaSuccess) throw std::runtime_error("lbse_run: no CUDA device");
  if (h.dev) {
    if (cur != h.ordinal)
      throw UsageError(fmt::format("lbse_run: current device {}, the handle was made on device {}", cur, h.ordinal));
    return;
  }
  h.dev = layerbench::make_cuda_device(cur);
  h.ordinal = cur;
  h.ops = layerbench::moe::make_cuda_std_ops(*h.dev);
  if (!h.table.empty()) layerbench::moe::load_expert_table(*h.ops, h.table);
  h.ops->set_expert_path(h.path);
}

void grow(lbse_handle& h, std::int64_t rows) {
  if (rows <= h.rows_cap) return;
  const std::int64_t I = h.model.moe_intermediate;
  h.gu = layerbench::Buffer();
  h.act = layerbench::Buffer();
  h.gu = h.dev->alloc(static_cast<std::size_t>(rows * 2 * I) * 2);
  h.act = h.dev->alloc(static_cast<std::size_t>(rows * I) * 2);
  h.rows_cap = rows;
}

}  // namespace

extern "C" {

int lbse_create(const char* preset, const char* path, const char* table, lbse_handle** out) {
  return guarded([&] {
    if (!out) throw UsageError("lbse_create: no output handle");
    *out = nullptr;
    if (!preset) throw UsageError("lbse_create: no preset");
    auto h = std::make_unique<lbse_handle>();
    h->model = layerbench::moe::preset(preset);  // UsageError listing the presets
    if (h->model.block != layerbench::moe::Block::standard)
      throw UsageError(fmt::format("preset {}: not a standard block (no expert MLPs of this kind)", h->model.name));
    const std::string_view p = path ? path : "";
    const auto colon = p.find(':');
    h->path = parse_path(std::string(p.substr(0, colon)).c_str());
    if (colon != std::string_view::npos) {  // wgmma:<modifiers>
      if (h->path != StdExpertPath::wgmma)
        throw UsageError(fmt::format("path '{}': launch modifiers apply to the wgmma path only", p));
      h->variant = layerbench::moe::cuda::parse_grouped_variant(p.substr(colon + 1));
      h->variant_words = std::string(p.substr(colon));
    }
    if (table && *table) {
      auto check = layerbench::moe::make_host_std_ops();
      layerbench::moe::load_expert_table(*check, table);  // UsageError naming the file and line
      h->table = table;
    }
    *out = h.release();
  });
}

void lbse_destroy(lbse_handle* h) { delete h; }

int lbse_shape(const lbse_handle* h, int64_t* hidden, int64_t* inter, int64_t* experts) {
  return guarded([&] {
    if (!h || !hidden || !inter || !experts) throw UsageError("lbse_shape: a null argument");
    *hidden = h->model.hidden;
    *inter = h->model.moe_intermediate;
    *experts = h->model.experts;
  });
}

int lbse_run(lbse_handle* h, const void* x, const void* w13, const void* wd, void* y, const int64_t* counts,
             int64_t experts, int64_t rows, void* stream) {
  return guarded([&] {
    check_run(h, x, w13, wd, y, counts, experts, rows);
    if (rows == 0) return;  // nothing to compute (every launch is checked where it is made)
    ensure_device(*h);
    grow(*h, rows);
    h->counts.assign(counts, counts + experts);
    const auto& m = h->model;
    const VariantScope scope(h->variant);  // the launches read the process-wide variant
    h->ops->expert_mlp(x, w13, wd, h->gu.data(), h->act.data(), y, h->counts, m.hidden, m.moe_intermediate,
                       m.activation, layerbench::Stream{stream});
  });
}

const char* lbse_path(lbse_handle* h) {
  if (!h) return "";
  const auto& m = h->model;
  h->text = h->ops ? std::string(layerbench::moe::to_string(h->ops->expert_path_for(m.hidden, m.moe_intermediate,
                                                                                     m.experts)))
                   : std::string(layerbench::moe::to_string(h->path));
  h->text += h->variant_words;
  return h->text.c_str();
}

const char* lbse_describe(lbse_handle* h) {
  if (!h) return "";
  h->text = h->ops ? h->ops->path("expert_compute") : std::string("not run yet");
  return h->text.c_str();
}

const char* lbse_last_error(void) { return last_error.c_str(); }

}  // extern "C"
