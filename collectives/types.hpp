#pragma once
// Element types and backends shared by every module. No CUDA headers here: host-only builds
// include this file too.
#include <cstdint>
#include <bit>
#include <cstring>
#include <string>
#include <string_view>

namespace layerbench {

enum class Backend { host, cuda };
enum class DType { bf16, fp32, int64 };

std::string_view to_string(Backend b);
std::string_view to_string(DType t);
// Throw std::invalid_argument with the accepted spellings on unknown input.
DType parse_dtype(std::string_view s);

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::bf16: return 2;
    case DType::fp32: return 4;
    case DType::int64: return 8;
  }
  return 0;
}

// bf16 on the host is stored as its 16 raw bits. Round-to-nearest-even, NaN kept quiet.
constexpr std::uint16_t float_to_bf16_bits(float f) {
  const auto u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  const std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}
constexpr float bf16_bits_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}
inline float round_to_bf16(float f) { return bf16_bits_to_float(float_to_bf16_bits(f)); }

}  // namespace layerbench
