#pragma once
// Shared vocabulary of the tests: alternatives, intervals, NaN.
#include <limits>
#include <string_view>

namespace layerbench::stats {

inline constexpr double nan_value = std::numeric_limits<double>::quiet_NaN();

// Which tail a p-value or interval covers. Deltas are candidate - base (the project's one sign
// convention: + = the candidate is larger, i.e. slower for times), so for times `greater` asks "is
// the candidate slower?" and `less` asks "is it faster?".
enum class Alternative { two_sided, less, greater };

std::string_view to_string(Alternative alternative);
// Accepts "two-sided"/"two_sided", "less", "greater"; throws std::invalid_argument otherwise.
Alternative parse_alternative(std::string_view text);

// A confidence interval; NaN bounds mean "not computable" (degenerate data), infinite bounds
// are the open end of a one-sided interval.
struct Interval {
  double low = nan_value;
  double high = nan_value;
  bool contains(double x) const { return low <= x && x <= high; }
};

}  // namespace layerbench::stats
