#include "reports/derived.hpp"
#include "common/json_number.hpp"

#include "stats/ratio.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace layerbench::reports {
namespace {

constexpr std::size_t kResamples = 20000;
constexpr std::uint64_t kSeedA = 0x6c62'6465'7269'7601ULL, kSeedB = 0x6c62'6465'7269'7602ULL;

std::vector<double> per_instance(const Measurement& m) {
  std::vector<double> x = m.samples_ms;
  const double k = std::max(1, m.instances);
  for (auto& v : x) v /= k;
  return x;
}

// value = f(median_a, median_b); interval from independent resamples of both medians
// (stats::function_of_medians).
template <class F>
Estimate combine(const Measurement& a, const Measurement* b, double confidence, double null_value, Unit unit,
                 const char* method, F f) {
  Estimate e;
  e.confidence = confidence;
  e.unit = unit;
  e.method = method;
  if (a.samples_ms.size() < 2 || (b != nullptr && b->samples_ms.size() < 2)) return e;
  const auto xb = b != nullptr ? per_instance(*b) : std::vector<double>{};
  const auto m = stats::function_of_medians(per_instance(a), xb, f, confidence, kResamples, kSeedA, kSeedB);
  e.valid = true;
  e.value = m.value;
  e.ci = m.ci;
  e.resolved = std::isfinite(null_value) ? !e.ci.contains(null_value) : true;
  return e;
}

}  // namespace

std::string Estimate::text() const {
  if (!valid) return "n/a (fewer than 2 samples)";
  const int level = static_cast<int>(std::lround(100 * confidence));
  const std::string interval =
      unit == Unit::none ? fmt::format("[{}, {}]", fmt_sig(ci.low), fmt_sig(ci.high)) : fmt_interval(ci.low, ci.high, unit);
  if (!resolved)
    return fmt::format("unresolved ({}% CI {} contains {})", level, interval, unit == Unit::none ? "1" : "0");
  const std::string v = unit == Unit::none ? fmt_sig(value) : fmt_quantity_signed(value, unit);
  return fmt::format("{}, {}% CI {}", v, level, interval);
}

nlohmann::json Estimate::to_json() const {
  nlohmann::json j = {{"valid", valid}, {"value", finite_or_null(value)}, {"ci", {finite_or_null(ci.low), finite_or_null(ci.high)}},
                      {"confidence", confidence}, {"resolved", resolved}, {"unit", unit_symbol(unit)},
                      {"method", method}};
  return j;
}

Estimate scaled_median(const Measurement& m, double factor, double confidence) {
  return combine(m, nullptr, confidence, stats::nan_value, Unit::ms,
                 "percentile bootstrap of the median, times the count",
                 [factor](double a, double) { return a * factor; });
}

Estimate difference_of_medians(const Measurement& a, const Measurement& b, double confidence) {
  return combine(a, &b, confidence, 0.0, Unit::ms, "difference of medians, independent percentile bootstraps",
                 [](double x, double y) { return x - y; });
}

Estimate ratio_of_medians(const Measurement& a, const Measurement& b, double confidence) {
  return combine(a, &b, confidence, 1.0, Unit::none, "ratio of medians, independent percentile bootstraps",
                 [](double x, double y) { return y > 0 ? x / y : stats::nan_value; });
}

Estimate rate_ratio(const Measurement& a, double work_a, const Measurement& b, double work_b, double confidence) {
  const double w = work_b > 0 ? work_a / work_b : stats::nan_value;
  return combine(a, &b, confidence, 1.0, Unit::none, "ratio of rates (work over median), independent percentile bootstraps",
                 [w](double ta, double tb) { return ta > 0 ? w * tb / ta : stats::nan_value; });
}

namespace {
// The median of per-iteration ratios with its bootstrap interval (fewer than 2 ratios: e unset).
Estimate median_ratio(Estimate e, const std::vector<double>& r, double confidence) {
  if (r.size() < 2) return e;
  const auto m = stats::median_interval(r, confidence, kResamples, kSeedA);
  e.valid = true;
  e.value = m.value;
  e.ci = m.ci;
  e.resolved = !e.ci.contains(1.0);
  return e;
}
}  // namespace

Estimate paired_rate_ratio(const Measurement& a, double work_a, double work_ref, double confidence) {
  Estimate e;
  e.confidence = confidence;
  e.unit = Unit::none;
  e.method = "median of per-iteration rate ratios (reference timed in the same iterations), percentile bootstrap over iterations";
  const std::size_t n = a.samples_ms.size();
  if (a.reference.empty() || a.reference_samples_ms.size() != n || n < 2 || !(work_ref > 0)) return e;
  const double k = std::max(1, a.instances);
  std::vector<double> r;
  for (std::size_t i = 0; i < n; ++i) {
    const double ta = a.samples_ms[i] / k, tb = a.reference_samples_ms[i];
    if (ta > 0 && tb > 0) r.push_back(work_a / work_ref * tb / ta);
  }
  return median_ratio(std::move(e), r, confidence);
}

Estimate paired_ratio(const std::vector<double>& a, const std::vector<double>& b, double confidence) {
  Estimate e;
  e.confidence = confidence;
  e.unit = Unit::none;
  e.method = "median of per-iteration ratios (timed in the same iterations), percentile bootstrap over iterations";
  std::vector<double> r;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] > 0 && b[i] > 0) r.push_back(a[i] / b[i]);
  if (a.size() != b.size()) return e;
  return median_ratio(std::move(e), r, confidence);
}

Estimate rate_ratio_to_reference(const Measurement& a, double work_a, const Measurement& reference, double work_ref,
                                 double confidence) {
  if (a.reference == reference.name && a.reference_samples_ms.size() == a.samples_ms.size())
    return paired_rate_ratio(a, work_a, work_ref, confidence);
  return rate_ratio(a, work_a, reference, work_ref, confidence);
}

}  // namespace layerbench::reports
