#include "collectives/types.hpp"

#include <stdexcept>

namespace layerbench {

std::string_view to_string(Backend b) { return b == Backend::cuda ? "cuda" : "host"; }

std::string_view to_string(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::fp32: return "fp32";
    case DType::int64: return "int64";
  }
  return "?";
}

DType parse_dtype(std::string_view s) {
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "fp32" || s == "float32" || s == "float") return DType::fp32;
  if (s == "int64") return DType::int64;
  throw std::invalid_argument("unknown dtype '" + std::string(s) + "' (expected bf16, fp32 or int64)");
}

}  // namespace layerbench
