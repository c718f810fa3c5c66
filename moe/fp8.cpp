// FP8 e4m3 on the host (moe/fp8.hpp).
#include "moe/fp8.hpp"

#include "moe/config/router.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace layerbench::moe::fp8 {

std::uint8_t e4m3_from_float(float x) {
  if (std::isnan(x)) return 0x7F;  // the canonical NaN, sign dropped (as cvt does)
  const auto sign = static_cast<std::uint8_t>((std::bit_cast<std::uint32_t>(x) >> 24) & 0x80u);
  const float a = std::fabs(x);
  if (a >= kE4m3Max) return sign | 0x7E;  // satfinite: +-448 from 448 up, infinities included
  if (a < 0x1p-6f) {
    // Subnormal range: multiples of 2^-9 (the scaling by 2^9 is exact); nearbyint rounds to
    // nearest even in the default mode; 8 * 2^-9 = 2^-6 is the smallest normal, encoded 0x08.
    return sign | static_cast<std::uint8_t>(std::nearbyint(a * 512.0f));
  }
  int e = 0;
  (void)std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1): unbiased exponent e - 1 in [-6, 8]
  const int ex = e - 1;
  // Multiples of the ulp 2^(ex - 3) in this binade: q in [8, 16]; 16 carries into the next
  // binade (at most 448: a < 448 rounds to 448 at worst).
  const float q = std::nearbyint(std::ldexp(a, 3 - ex));
  const int bits = ((ex + 7) << 3) + static_cast<int>(q) - 8;  // q == 16 adds one to the exponent field
  return sign | static_cast<std::uint8_t>(bits);
}

float e4m3_to_float(std::uint8_t v) {
  const bool neg = (v & 0x80u) != 0;
  const int ex = (v >> 3) & 0xF, m = v & 0x7;
  float r = 0;
  if (ex == 0xF && m == 0x7)
    r = std::numeric_limits<float>::quiet_NaN();
  else if (ex == 0)
    r = std::ldexp(static_cast<float>(m), -9);
  else
    r = std::ldexp(static_cast<float>(8 + m), ex - 10);
  return neg ? -r : r;
}

float scale_for(float amax) { return std::max(amax, kAmaxFloor) / kE4m3Max; }

std::string_view to_string(Scaling s) {
  switch (s) {
    case Scaling::rowwise: return "rowwise";
    case Scaling::block_1x128: return "1x128 blocks";
    case Scaling::block_128x128: return "128x128 blocks";
  }
  return "?";
}

namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace

float Quantized::scale_at(std::int64_t r, std::int64_t c) const {
  switch (scaling) {
    case Scaling::rowwise: return scales[static_cast<std::size_t>(r)];
    case Scaling::block_1x128: return scales[static_cast<std::size_t>(r * ceil_div(cols, kBlock) + c / kBlock)];
    case Scaling::block_128x128: {
      const std::int64_t g = r / rows, rr = r % rows, rb = ceil_div(rows, kBlock), cb = ceil_div(cols, kBlock);
      return scales[static_cast<std::size_t>((g * rb + rr / kBlock) * cb + c / kBlock)];
    }
  }
  return 0;
}

Quantized quantize(const float* x, std::int64_t groups, std::int64_t rows, std::int64_t cols, Scaling s) {
  if (groups < 1 || rows < 0 || cols < 0) throw std::invalid_argument("fp8::quantize: negative shape");
  Quantized m;
  m.scaling = s;
  m.groups = groups;
  m.rows = rows;
  m.cols = cols;
  const std::int64_t all = groups * rows, cb = ceil_div(cols, kBlock), rb = ceil_div(rows, kBlock);
  m.q.resize(static_cast<std::size_t>(all * cols));
  // amax per scale group, then the scales, then the elements.
  std::vector<float> amax(static_cast<std::size_t>(s == Scaling::rowwise ? all
                                                   : s == Scaling::block_1x128 ? all * cb
                                                                               : groups * rb * cb),
                          0.0f);
  auto group_of = [&](std::int64_t r, std::int64_t c) -> std::size_t {
    switch (s) {
      case Scaling::rowwise: return static_cast<std::size_t>(r);
      case Scaling::block_1x128: return static_cast<std::size_t>(r * cb + c / kBlock);
      case Scaling::block_128x128: return static_cast<std::size_t>(((r / rows) * rb + (r % rows) / kBlock) * cb + c / kBlock);
    }
    return 0;
  };
  for (std::int64_t r = 0; r < all; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      float& a = amax[group_of(r, c)];
      const float v = std::fabs(x[r * cols + c]);
      if (std::isnan(v) || v > a) a = std::isnan(a) ? a : v;  // a NaN amax stays (and poisons the group)
    }
  m.scales.resize(amax.size());
  for (std::size_t i = 0; i < amax.size(); ++i) m.scales[i] = scale_for(amax[i]);
  for (std::int64_t r = 0; r < all; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      m.q[static_cast<std::size_t>(r * cols + c)] = e4m3_from_float(x[r * cols + c] / m.scales[group_of(r, c)]);
  return m;
}

std::vector<float> dequantize(const Quantized& m) {
  const std::int64_t all = m.groups * m.rows;
  std::vector<float> out(static_cast<std::size_t>(all * m.cols));
  for (std::int64_t r = 0; r < all; ++r)
    for (std::int64_t c = 0; c < m.cols; ++c)
      out[static_cast<std::size_t>(r * m.cols + c)] = e4m3_to_float(m.q[static_cast<std::size_t>(r * m.cols + c)]) *
                                                      m.scale_at(r, c);
  return out;
}

namespace {
double dot(const float* a, const float* b, std::int64_t n) {
  double s = 0;
  for (std::int64_t k = 0; k < n; ++k) s += static_cast<double>(a[k]) * static_cast<double>(b[k]);
  return s;
}
std::int64_t total_rows(const std::vector<std::int64_t>& counts) {
  std::int64_t r = 0;
  for (auto c : counts) r += c;
  return r;
}
}  // namespace

std::vector<double> grouped_gate_up(const std::vector<float>& x, const std::vector<float>& w13,
                                    const std::vector<std::int64_t>& counts, std::int64_t h, std::int64_t inter,
                                    const ActivationSpec& act) {
  const std::int64_t R = total_rows(counts);
  if (static_cast<std::int64_t>(x.size()) < R * h ||
      static_cast<std::int64_t>(w13.size()) < static_cast<std::int64_t>(counts.size()) * 2 * inter * h)
    throw std::invalid_argument("fp8::grouped_gate_up: operands smaller than the shape");
  std::vector<double> out(static_cast<std::size_t>(R * inter));
  std::int64_t row = 0;
  for (std::size_t e = 0; e < counts.size(); ++e) {
    const float* w = w13.data() + static_cast<std::int64_t>(e) * 2 * inter * h;
    for (std::int64_t i = 0; i < counts[e]; ++i, ++row) {
      const float* xr = x.data() + row * h;
      for (std::int64_t c = 0; c < inter; ++c) {
        const double g = dot(xr, w + c * h, h), u = dot(xr, w + (inter + c) * h, h);
        out[static_cast<std::size_t>(row * inter + c)] = glu(static_cast<float>(g), static_cast<float>(u), act);
      }
    }
  }
  return out;
}

std::vector<double> grouped_down(const std::vector<float>& a, const std::vector<float>& wd,
                                 const std::vector<std::int64_t>& counts, std::int64_t inter, std::int64_t h) {
  const std::int64_t R = total_rows(counts);
  if (static_cast<std::int64_t>(a.size()) < R * inter ||
      static_cast<std::int64_t>(wd.size()) < static_cast<std::int64_t>(counts.size()) * h * inter)
    throw std::invalid_argument("fp8::grouped_down: operands smaller than the shape");
  std::vector<double> out(static_cast<std::size_t>(R * h));
  std::int64_t row = 0;
  for (std::size_t e = 0; e < counts.size(); ++e) {
    const float* w = wd.data() + static_cast<std::int64_t>(e) * h * inter;
    for (std::int64_t i = 0; i < counts[e]; ++i, ++row)
      for (std::int64_t c = 0; c < h; ++c)
        out[static_cast<std::size_t>(row * h + c)] = dot(a.data() + row * inter, w + c * inter, inter);
  }
  return out;
}

double relative_error(const std::vector<float>& out, const std::vector<double>& ref) {
  if (out.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) return std::numeric_limits<double>::infinity();
    const double d = static_cast<double>(out[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::numeric_limits<double>::infinity();
}

}  // namespace layerbench::moe::fp8
