// The FP8 dispatch row on the host (moe/standard/fp8_dispatch.hpp).
#include "moe/standard/fp8_dispatch.hpp"

#include "moe/fp8.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace layerbench::moe::fp8 {

std::int64_t dispatch_scale_groups(std::int64_t hidden) { return (hidden + kBlock - 1) / kBlock; }

std::int64_t dispatch_row_bytes(std::int64_t hidden) { return hidden + 4 * dispatch_scale_groups(hidden); }

void quantize_dispatch_row(const float* x, std::int64_t hidden, std::uint8_t* row) {
  const std::int64_t groups = dispatch_scale_groups(hidden);
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t c0 = g * kBlock, c1 = std::min(c0 + kBlock, hidden);
    float amax = 0.0f;
    for (std::int64_t c = c0; c < c1; ++c) amax = std::fmax(amax, std::fabs(x[c]));  // NaN ignored, as fmaxf
    const float s = scale_for(amax);
    for (std::int64_t c = c0; c < c1; ++c) row[c] = e4m3_from_float(x[c] / s);
    std::memcpy(row + hidden + 4 * g, &s, 4);
  }
}

float dispatch_row_scale(const std::uint8_t* row, std::int64_t hidden, std::int64_t group) {
  float s = 0;
  std::memcpy(&s, row + hidden + 4 * group, 4);
  return s;
}

void dequantize_dispatch_row(const std::uint8_t* row, std::int64_t hidden, float* x) {
  const std::int64_t groups = dispatch_scale_groups(hidden);
  for (std::int64_t g = 0; g < groups; ++g) {
    const float s = dispatch_row_scale(row, hidden, g);
    for (std::int64_t c = g * kBlock; c < std::min((g + 1) * kBlock, hidden); ++c) x[c] = e4m3_to_float(row[c]) * s;
  }
}

}  // namespace layerbench::moe::fp8
