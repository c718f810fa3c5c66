#pragma once
// Robust descriptive figures: trimmed mean and Tukey fences (outliers labelled, never removed).
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace layerbench::stats {

// scipy trim_mean: sort, drop floor(proportion * n) values from each end, average the rest.
// Throws std::invalid_argument when nothing remains or proportion is outside [0, 0.5).
double trimmed_mean(std::span<const double> x, double proportion);

struct TukeyFences {
  double q1 = 0, q3 = 0, iqr = 0;  // type-7 quartiles
  double inner_low = 0, inner_high = 0;  // q1 - 1.5 IQR, q3 + 1.5 IQR
  double outer_low = 0, outer_high = 0;  // q1 - 3 IQR, q3 + 3 IQR
};
TukeyFences tukey_fences(std::span<const double> x);

enum class OutlierSide { low, high };
enum class OutlierSeverity { mild, severe };
std::string_view to_string(OutlierSide side);
std::string_view to_string(OutlierSeverity severity);

struct Outlier {
  std::size_t index = 0;  // position in the input
  double value = 0;
  OutlierSide side = OutlierSide::low;
  OutlierSeverity severity = OutlierSeverity::mild;
};
// Points strictly beyond a fence, in input order; a point on a fence is normal.
std::vector<Outlier> tukey_outliers(std::span<const double> x, const TukeyFences& fences);
std::vector<Outlier> tukey_outliers(std::span<const double> x);

}  // namespace layerbench::stats
