#pragma once
// The one rule for a number in a JSON output: a finite value as itself, NaN or an infinity as null
// (JSON has neither; a reader then sees "not computable" instead of a parse error).
#include <nlohmann/json.hpp>

#include <cmath>

namespace layerbench {

inline nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace layerbench
