#pragma once
// The one number formatter of printed text (tables, notes, messages): fmt's general or fixed
// format at a stated precision, and the one rule for what is not a number of the quantity: NaN
// (not computed, undefined) and an infinity print as kNotAvailable ("—"), as JSON outputs write
// them as null (common/json_number.hpp). reports/units and reports/table format through it.
#include <fmt/format.h>

#include <cmath>
#include <string>

namespace layerbench::text {

inline constexpr const char* kNotAvailable = "—";

// "1.2346" (`digits` significant digits).
inline std::string number(double v, int digits = 5) {
  return std::isfinite(v) ? fmt::format("{:.{}g}", v, digits) : kNotAvailable;
}
// "+1.2346", "-0.5".
inline std::string signed_number(double v, int digits = 5) {
  return std::isfinite(v) ? fmt::format("{:+.{}g}", v, digits) : kNotAvailable;
}
// "12.3" (`decimals` after the point).
inline std::string fixed(double v, int decimals) {
  return std::isfinite(v) ? fmt::format("{:.{}f}", v, decimals) : kNotAvailable;
}
// "+12.3" with an optional suffix.
inline std::string signed_fixed(double v, int decimals, const std::string& suffix = {}) {
  return std::isfinite(v) ? fmt::format("{:+.{}f}{}", v, decimals, suffix) : kNotAvailable;
}
// "+1.234%" of a value already in percent.
inline std::string signed_percent(double v, int decimals = 3) {
  return std::isfinite(v) ? fmt::format("{:+.{}f}%", v, decimals) : kNotAvailable;
}

}  // namespace layerbench::text
