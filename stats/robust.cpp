#include "stats/robust.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "stats/summary.hpp"

namespace layerbench::stats {

double trimmed_mean(std::span<const double> x, double proportion) {
  if (!(proportion >= 0 && proportion < 0.5)) {
    throw std::invalid_argument("trim proportion must be in [0, 0.5)");
  }
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  const auto g = static_cast<std::size_t>(std::floor(proportion * static_cast<double>(s.size())));
  if (2 * g >= s.size()) throw std::invalid_argument("trim proportion too big: nothing remains");
  double sum = 0;
  for (std::size_t i = g; i < s.size() - g; ++i) sum += s[i];
  return sum / static_cast<double>(s.size() - 2 * g);
}

TukeyFences tukey_fences(std::span<const double> x) {
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  TukeyFences f;
  f.q1 = quantile_sorted(s, 0.25);
  f.q3 = quantile_sorted(s, 0.75);
  f.iqr = f.q3 - f.q1;
  f.inner_low = f.q1 - 1.5 * f.iqr;
  f.inner_high = f.q3 + 1.5 * f.iqr;
  f.outer_low = f.q1 - 3.0 * f.iqr;
  f.outer_high = f.q3 + 3.0 * f.iqr;
  return f;
}

std::string_view to_string(OutlierSide side) { return side == OutlierSide::low ? "low" : "high"; }
std::string_view to_string(OutlierSeverity severity) {
  return severity == OutlierSeverity::mild ? "mild" : "severe";
}

std::vector<Outlier> tukey_outliers(std::span<const double> x, const TukeyFences& f) {
  std::vector<Outlier> out;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    if (v < f.outer_low) out.push_back({i, v, OutlierSide::low, OutlierSeverity::severe});
    else if (v < f.inner_low) out.push_back({i, v, OutlierSide::low, OutlierSeverity::mild});
    else if (v > f.outer_high) out.push_back({i, v, OutlierSide::high, OutlierSeverity::severe});
    else if (v > f.inner_high) out.push_back({i, v, OutlierSide::high, OutlierSeverity::mild});
  }
  return out;
}

std::vector<Outlier> tukey_outliers(std::span<const double> x) {
  return tukey_outliers(x, tukey_fences(x));
}

}  // namespace layerbench::stats
