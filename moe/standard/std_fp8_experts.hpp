#pragma once
// FP8 expert MLPs of the standard block (Model::precision: the routed experts, and the shared
// experts as one expert over every token), on the recipes of moe/fp8.hpp:
//   fp8-rowwise  weights one scale per output channel; the expert rows (x) one scale per row;
//                gate/up with the activation, the activation (rounded to the act type) quantized
//                one scale per row; down. torch._scaled_grouped_mm's recipe.
//   fp8-block    weights 128 x 128 blocks (gate and up of each expert apart, as the checkpoints
//                store them); x and the activation 1 x 128 per row; partial sums promoted every
//                128 K elements (DeepSeek-V3's recipe).
// The weights are filled in the act type (the seeded values every backend shares) and quantized
// once by set_weights; outputs are in the act type. The host backend quantizes and dequantizes
// with the same rounding and computes in fp32 on the dequantized operands, in the host block's
// order of operations, so the CPU oracle (moe/standard/std_reference.hpp) matches it bit for bit;
// the CUDA backend runs moe/hopper's grouped FP8 kernels (checked against the oracle).
#include "collectives/device.hpp"
#include "moe/config/model.hpp"
#include "moe/fp8.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace layerbench::moe {

enum class ExpertPrecision { act, fp8_rowwise, fp8_block };
std::string_view to_string(ExpertPrecision p);  // "act" | "fp8-rowwise" | "fp8-block"
// A part of Model::precision as the block runs it (bf16 -> act).
ExpertPrecision expert_precision(const Precision::Part& p);
// The recipe's scaling of activation rows (rowwise or 1x128) and of weights (rowwise or 128x128).
fp8::Scaling activation_scaling(ExpertPrecision p);
fp8::Scaling weight_scaling(ExpertPrecision p);

// x (rows, cols) quantized with the recipe's activation scaling and dequantized in place (fp32).
void quantize_dequantize_rows(float* x, std::int64_t rows, std::int64_t cols, ExpertPrecision p);
// The weights of `experts` experts quantized and dequantized in place: w13 (E, 2I, h) (gate and up
// of each expert apart for 128 x 128 blocks), wd (E, h, I).
void quantize_dequantize_weights(float* w13, float* wd, std::int64_t experts, std::int64_t h, std::int64_t inter,
                                 ExpertPrecision p);

class Fp8Experts {
 public:
  virtual ~Fp8Experts() = default;
  // Quantizes the act-type weights w13 (E, 2I, h), wd (E, h, I) once (they are not kept).
  virtual void set_weights(const void* w13, const void* wd, Stream s) = 0;
  // The MLPs over rows grouped expert-major (rows[e] per expert, host counts): x (R, h) act type,
  // the activation into act (R, I), down into y (R, h).
  virtual void mlp(const void* x, void* act, void* y, const std::vector<std::int64_t>& rows, Stream s) = 0;
  // The same from per-expert counts on the device (int32, summing to `rows`): no host
  // synchronisation. Only where takes_device_counts(); elsewhere it throws Error.
  virtual void mlp_on_device(const void* x, void* act, void* y, const std::int32_t* counts, std::int64_t rows,
                             Stream s);
  // Whether mlp_on_device runs (the grouped Hopper kernels build their tile lists from device
  // counts; the host backend and the cuBLASLt fallback size their work from host counts).
  virtual bool takes_device_counts() const { return false; }
  // How it runs (the component table's path text).
  virtual std::string path() const = 0;
};

struct Fp8ExpertShape {
  ExpertPrecision precision = ExpertPrecision::fp8_block;
  std::int64_t experts = 0, hidden = 0, inter = 0;
  std::int64_t rows_cap = 0;  // the most rows one call passes
  ActivationSpec activation;
};

std::unique_ptr<Fp8Experts> make_host_fp8_experts(const Fp8ExpertShape& shape);
// "" where the CUDA backend runs the shape, else why not: the grouped FP8 kernels on compute
// capability 9.0 (their limits: moe/hopper), elsewhere the cuBLASLt fallback
// (moe/standard/std_fp8_lt_experts.cpp: fp8-rowwise, compute capability 8.9 or newer).
std::string cuda_fp8_experts_unsupported(const Fp8ExpertShape& shape);
// Throws without CUDA, and where cuda_fp8_experts_unsupported says why.
std::unique_ptr<Fp8Experts> make_cuda_fp8_experts(Device& dev, const Fp8ExpertShape& shape);
// The fallback on its own (the GPU test runs it on a compute capability 9.0 device too).
std::string lt_fp8_experts_unsupported(const Fp8ExpertShape& shape);
std::unique_ptr<Fp8Experts> make_lt_fp8_experts(Device& dev, const Fp8ExpertShape& shape);

}  // namespace layerbench::moe
