// liblayerbench_fp8_experts (tools/fp8_experts_capi.h): the FP8 grouped expert GEMMs on the
// caller's buffers and stream. Everything is validated here, once per call.
#include "tools/fp8_experts_capi.h"

#include "common/usage.hpp"
#include "moe/hopper/fp8_block_sm90.cuh"
#include "moe/hopper/fp8_grouped_sm90.cuh"
#include "moe/config/model.hpp"
#include "moe/hopper/std_grouped_sm90.cuh"
#include "tools/capi_guard.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

struct lbf8_handle {
  layerbench::moe::Model model;
  std::int64_t rows_cap = 0;
  void* work = nullptr;
  layerbench::moe::cuda::StdGroupedWork lists;
  void* block_work = nullptr;  // the block-scaled kernels' lists (absent where they do not take the shape)
  layerbench::moe::cuda::StdGroupedWork block_lists;
};

namespace {

using layerbench::UsageError;
thread_local std::string last_error;

template <class F>
int guarded(F&& body) {
  return layerbench::capi::guarded(last_error, std::forward<F>(body));
}

void need(bool ok, const std::string& what) {
  if (!ok) throw UsageError(what);
}

void check_rows(const lbf8_handle* h, std::int64_t rows) {
  need(h != nullptr, "null handle");
  need(rows >= 0 && rows <= h->rows_cap,
       "rows " + std::to_string(rows) + " outside 0.." + std::to_string(h->rows_cap) + " (the handle's capacity)");
}

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

extern "C" {

int lbf8_create(const char* preset, int64_t rows_cap, lbf8_handle** out) {
  return guarded([&] {
    need(preset != nullptr && out != nullptr, "null argument");
    need(rows_cap > 0, "rows_cap must be positive");
    auto m = layerbench::moe::preset(preset);
    need(m.block == layerbench::moe::Block::standard, std::string(preset) + " is not a standard-block preset");
    const std::string why = layerbench::moe::cuda::fp8_grouped_unsupported(m.hidden, m.moe_intermediate, m.experts);
    need(why.empty(), std::string(preset) + ": " + why);
    auto* h = new lbf8_handle{std::move(m), rows_cap, nullptr, {}, nullptr, {}};
    const auto bytes =
        layerbench::moe::cuda::std_grouped_work_bytes(rows_cap, h->model.experts, h->model.hidden, h->model.moe_intermediate);
    if (cudaMalloc(&h->work, static_cast<std::size_t>(bytes)) != cudaSuccess) {
      delete h;
      throw std::runtime_error("cudaMalloc of the tile lists failed");
    }
    h->lists = layerbench::moe::cuda::std_grouped_work(h->work, rows_cap, h->model.experts, h->model.hidden,
                                                        h->model.moe_intermediate);
    namespace c = layerbench::moe::cuda;
    if (c::fp8_block_unsupported(h->model.hidden, h->model.moe_intermediate, h->model.experts, rows_cap).empty()) {
      const auto bb = c::fp8_block_work_bytes(rows_cap, h->model.experts, h->model.hidden, h->model.moe_intermediate);
      if (cudaMalloc(&h->block_work, static_cast<std::size_t>(bb)) != cudaSuccess) {
        lbf8_destroy(h);
        throw std::runtime_error("cudaMalloc of the block-scaled tile lists failed");
      }
      h->block_lists =
          c::fp8_block_work(h->block_work, rows_cap, h->model.experts, h->model.hidden, h->model.moe_intermediate);
    }
    *out = h;
  });
}

void lbf8_destroy(lbf8_handle* h) {
  if (h == nullptr) return;
  if (h->work != nullptr) (void)cudaFree(h->work);
  if (h->block_work != nullptr) (void)cudaFree(h->block_work);
  delete h;
}

int lbf8_shape(const lbf8_handle* h, int64_t* hidden, int64_t* inter, int64_t* experts) {
  return guarded([&] {
    need(h != nullptr && hidden != nullptr && inter != nullptr && experts != nullptr, "null argument");
    *hidden = h->model.hidden;
    *inter = h->model.moe_intermediate;
    *experts = h->model.experts;
  });
}

int lbf8_set_variant(const char* modifiers) {
  return guarded([&] {
    namespace c = layerbench::moe::cuda;
    c::std_grouped_set_variant(modifiers && *modifiers ? c::parse_grouped_variant(modifiers) : c::StdGroupedVariant{});
  });
}

int lbf8_tiles(lbf8_handle* h, const int32_t* counts, void* stream) {
  return guarded([&] {
    need(h != nullptr && counts != nullptr, "null argument");
    namespace c = layerbench::moe::cuda;
    const auto& m = h->model;
    c::std_grouped_tiles(counts, m.experts, c::std_gate_up_blocks(m.moe_intermediate), c::std_down_blocks(m.hidden),
                         h->lists.gu, h->lists.gu_max, h->lists.dn, h->lists.dn_max, h->lists.live, as_stream(stream));
  });
}

int lbf8_gate_up(lbf8_handle* h, const void* x, const float* x_scale, const void* w13, const float* w13_scale,
                 void* act, int64_t rows, void* stream) {
  return guarded([&] {
    check_rows(h, rows);
    need(x != nullptr && x_scale != nullptr && w13 != nullptr && w13_scale != nullptr && act != nullptr,
         "null buffer");
    const auto& m = h->model;
    layerbench::moe::cuda::fp8_gate_up_sm90(static_cast<const std::uint8_t*>(x), x_scale, rows, m.hidden,
                                            static_cast<const std::uint8_t*>(w13), w13_scale, m.experts,
                                            m.moe_intermediate, static_cast<__nv_bfloat16*>(act), h->lists.gu,
                                            h->lists.gu_max, h->lists.live, m.activation, as_stream(stream));
  });
}

int lbf8_down(lbf8_handle* h, const void* a, const float* a_scale, const void* wd, const float* wd_scale, void* y,
              int64_t rows, void* stream) {
  return guarded([&] {
    check_rows(h, rows);
    need(a != nullptr && a_scale != nullptr && wd != nullptr && wd_scale != nullptr && y != nullptr, "null buffer");
    const auto& m = h->model;
    layerbench::moe::cuda::fp8_down_sm90(static_cast<const std::uint8_t*>(a), a_scale, rows, m.moe_intermediate,
                                         static_cast<const std::uint8_t*>(wd), wd_scale, m.experts, m.hidden,
                                         static_cast<__nv_bfloat16*>(y), h->lists.dn, h->lists.dn_max,
                                         h->lists.live + 1, as_stream(stream));
  });
}

namespace {
void need_block(const lbf8_handle* h) {
  need(h != nullptr, "null handle");
  const std::string why = layerbench::moe::cuda::fp8_block_unsupported(h->model.hidden, h->model.moe_intermediate,
                                                                       h->model.experts, h->rows_cap);
  need(why.empty(), h->model.name + ": " + why);
  need(h->block_work != nullptr, "the block-scaled tile lists were not allocated");
}
}  // namespace

int lbf8_block_tiles(lbf8_handle* h, const int32_t* counts, void* stream) {
  return guarded([&] {
    need_block(h);
    need(counts != nullptr, "null argument");
    layerbench::moe::cuda::fp8_block_tiles(counts, h->model.experts, h->model.hidden, h->model.moe_intermediate,
                                           h->block_lists, as_stream(stream));
  });
}

int lbf8_block_gate_up(lbf8_handle* h, const void* x, const float* x_scale, const void* w13, const float* w13_scale,
                       void* act, void* act_q, float* act_scale, int64_t rows, void* stream) {
  return guarded([&] {
    need_block(h);
    check_rows(h, rows);
    need(x != nullptr && x_scale != nullptr && w13 != nullptr && w13_scale != nullptr, "null buffer");
    need(act_q != nullptr ? act_scale != nullptr : act != nullptr, "no output buffer (act, or act_q with act_scale)");
    const auto& m = h->model;
    layerbench::moe::cuda::fp8_block_gate_up_sm90(
        static_cast<const std::uint8_t*>(x), x_scale, rows, m.hidden, static_cast<const std::uint8_t*>(w13), w13_scale,
        m.experts, m.moe_intermediate, static_cast<__nv_bfloat16*>(act), static_cast<std::uint8_t*>(act_q), act_scale,
        h->block_lists.gu, h->block_lists.gu_max, h->block_lists.live, m.activation, as_stream(stream));
  });
}

int lbf8_block_down(lbf8_handle* h, const void* a, const float* a_scale, const void* wd, const float* wd_scale,
                    void* y, int64_t rows, void* stream) {
  return guarded([&] {
    need_block(h);
    check_rows(h, rows);
    need(a != nullptr && a_scale != nullptr && wd != nullptr && wd_scale != nullptr && y != nullptr, "null buffer");
    const auto& m = h->model;
    layerbench::moe::cuda::fp8_block_down_sm90(static_cast<const std::uint8_t*>(a), a_scale, rows, m.moe_intermediate,
                                               static_cast<const std::uint8_t*>(wd), wd_scale, m.experts, m.hidden,
                                               static_cast<__nv_bfloat16*>(y), h->block_lists.dn,
                                               h->block_lists.dn_max, h->block_lists.live + 1, as_stream(stream));
  });
}

int lbf8_quantize_1x128(const void* x, int64_t rows, int64_t cols, void* q, float* scales, void* stream) {
  return guarded([&] {
    need(x != nullptr && q != nullptr && scales != nullptr, "null buffer");
    need(rows >= 0 && cols > 0 && cols % 16 == 0, "rows must be >= 0 and cols a positive multiple of 16");
    layerbench::moe::cuda::fp8_quantize_1x128(static_cast<const __nv_bfloat16*>(x), rows, cols,
                                              static_cast<std::uint8_t*>(q), scales, as_stream(stream));
  });
}

int lbf8_quantize_128x128(const void* w, int64_t groups, int64_t rows, int64_t cols, void* q, float* scales,
                          void* stream) {
  return guarded([&] {
    need(w != nullptr && q != nullptr && scales != nullptr, "null buffer");
    need(groups >= 0 && rows >= 0 && cols > 0 && cols % 16 == 0,
         "groups and rows must be >= 0 and cols a positive multiple of 16");
    layerbench::moe::cuda::fp8_quantize_128x128(static_cast<const __nv_bfloat16*>(w), groups, rows, cols,
                                                static_cast<std::uint8_t*>(q), scales, as_stream(stream));
  });
}

const char* lbf8_last_error(void) { return last_error.c_str(); }

}  // extern "C"
