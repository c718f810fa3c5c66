#pragma once
// FP8 (e4m3, "float8_e4m3fn") on the host: the element format, the scale recipes of FP8 expert
// weights and activations, and the CPU oracle of the grouped expert GEMMs on the dequantized
// operands, against which every FP8 expert path is checked.
//
// e4m3: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; 0x7F / 0xFF are NaN; the
// largest finite value is 448 (0x7E), the smallest normal 2^-6, subnormals m * 2^-9 (m = 1..7).
// e4m3_from_float rounds to nearest, ties to even, and saturates to +-448 (infinities too); NaN
// becomes 0x7F: the GPU's cvt.rn.satfinite.e4m3x2.f32 (__nv_fp8_e4m3's conversion) bit for bit.
//
// Scales (fp32, one per group of elements): s = max(amax, 1e-4) / 448 and q = e4m3(x / s), the
// DeepSeek-V3 recipe (its inference/kernel.py act_quant); dequantized x' = float(q) * s.
//   rowwise    one scale per row of a row-major (rows, cols) matrix: activations per token,
//              weights (out, in) per output channel;
//   1x128      per row, per 128 columns (activations; DeepSeek-V3's per token per 128 channels);
//   128x128    per block of 128 rows x 128 columns (weights), the blocks of each group (expert)
//              of `rows` rows separate.
// Columns or rows past a multiple of 128 make a smaller edge group (the zero padding of the
// checkpoints' recipe changes no amax).
#include "moe/config/model.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace layerbench::moe::fp8 {

inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kAmaxFloor = 1e-4f;
inline constexpr std::int64_t kBlock = 128;

std::uint8_t e4m3_from_float(float x);
float e4m3_to_float(std::uint8_t v);
// The scale of a group whose largest magnitude is amax.
float scale_for(float amax);

enum class Scaling { rowwise, block_1x128, block_128x128 };
std::string_view to_string(Scaling s);

// A quantized (groups x rows, cols) row-major matrix. scales: rowwise (groups * rows);
// 1x128 (groups * rows, ceil(cols / 128)); 128x128 (groups, ceil(rows / 128), ceil(cols / 128)),
// all row-major.
struct Quantized {
  Scaling scaling = Scaling::rowwise;
  std::int64_t groups = 1, rows = 0, cols = 0;
  std::vector<std::uint8_t> q;
  std::vector<float> scales;
  // The scale of element (row r of all groups * rows, column c).
  float scale_at(std::int64_t r, std::int64_t c) const;
};

Quantized quantize(const float* x, std::int64_t groups, std::int64_t rows, std::int64_t cols, Scaling s);
std::vector<float> dequantize(const Quantized& m);

// The CPU oracle of the grouped expert MLPs on dequantized operands, in double: rows are
// expert-major and compact (counts[e] rows of expert e), x (R, h), w13 (E, 2I, h) (gate rows then
// up rows), wd (E, h, I).
//   gate_up: act (R, I) = glu(x W13[e][:I]^T, x W13[e][I:]^T), the preset's activation (glu());
//   down:    y (R, h) = a Wd[e]^T.
std::vector<double> grouped_gate_up(const std::vector<float>& x, const std::vector<float>& w13,
                                    const std::vector<std::int64_t>& counts, std::int64_t h, std::int64_t inter,
                                    const ActivationSpec& act);
std::vector<double> grouped_down(const std::vector<float>& a, const std::vector<float>& wd,
                                 const std::vector<std::int64_t>& counts, std::int64_t inter, std::int64_t h);

// ||out - ref||_2 / ||ref||_2 (infinite where out has a non-finite value or ref is all zero).
double relative_error(const std::vector<float>& out, const std::vector<double>& ref);

}  // namespace layerbench::moe::fp8
