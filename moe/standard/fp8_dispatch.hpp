#pragma once
// The FP8 dispatch row of the standard MoE block (moe/std_block.hpp, DispatchPrecision::fp8): one
// token copy as it crosses the expert-parallel all-to-allv, DeepSeek-V3's recipe for
// low-precision dispatch (activations in e4m3 with one fp32 scale per token per 128 channels,
// DeepEP's "FP8 dispatching", pplx-kernels' hidden bytes + scale bytes).
//
// Layout of a row of `hidden` channels, `dispatch_row_bytes(hidden)` bytes:
//   bytes [0, hidden)                      the channels as e4m3 (moe/fp8.hpp: RNE, satfinite)
//   bytes [hidden, hidden + 4 * groups)    one fp32 scale per group of 128 channels, native byte
//                                          order, groups = ceil(hidden / 128)
// Group g holds channels [128 g, min(128 g + 128, hidden)): when hidden is not a multiple of 128
// the last group is partial and its scale comes from its own channels only (the zero padding of
// the checkpoints' recipe changes no amax). Scale s = max(amax, 1e-4) / 448 (fp8::scale_for),
// q = e4m3(x / s), dequantized x' = float(q) * s; amax ignores NaN (fmaxf, as the GPU kernel).
// The scales start at byte `hidden` of the row, so they are 4-byte aligned only when hidden and
// the row's offset are: read and write them with memcpy (dispatch_row_scale).
#include <cstdint>

namespace layerbench::moe::fp8 {

std::int64_t dispatch_scale_groups(std::int64_t hidden);
// hidden + 4 * ceil(hidden / 128).
std::int64_t dispatch_row_bytes(std::int64_t hidden);

// x (hidden floats) -> row (dispatch_row_bytes(hidden) bytes).
void quantize_dispatch_row(const float* x, std::int64_t hidden, std::uint8_t* row);
// row -> x' (hidden floats), float(q) * s in fp32.
void dequantize_dispatch_row(const std::uint8_t* row, std::int64_t hidden, float* x);
// The scale of group g of a row.
float dispatch_row_scale(const std::uint8_t* row, std::int64_t hidden, std::int64_t group);

}  // namespace layerbench::moe::fp8
