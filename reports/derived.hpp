#pragma once
// Figures derived from separately timed measurements, each with its uncertainty: a median
// scaled by a count (an isolated cost x the instances saved), the difference and the ratio of
// two medians. The interval is a percentile bootstrap of the medians, the two measurements
// resampled independently (they are separate runs, not pairs). A difference whose interval
// contains 0, or a ratio whose interval contains 1, is unresolved and prints as such.
#include "reports/result.hpp"
#include "reports/units.hpp"
#include "stats/common.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace layerbench::reports {

struct Estimate {
  bool valid = false;       // false: too few samples (fewer than 2 in an input)
  double value = stats::nan_value;
  stats::Interval ci;
  double confidence = 0.95;
  bool resolved = false;    // the interval excludes the null value (0 for a difference, 1 for a ratio)
  Unit unit = Unit::ms;
  std::string method;

  // "+1.23 ms, 95% CI [+1.10 ms, +1.40 ms]", "unresolved (95% CI [...] contains 0)" or "n/a (why)".
  std::string text() const;
  nlohmann::json to_json() const;
};

// median(m) x factor (per instance for a stack).
Estimate scaled_median(const Measurement& m, double factor, double confidence);
// median(a) - median(b).
Estimate difference_of_medians(const Measurement& a, const Measurement& b, double confidence);
// median(a) / median(b) (per instance), unit none.
Estimate ratio_of_medians(const Measurement& a, const Measurement& b, double confidence);
// A rate of a against the same rate of b: (work_a / t_a) / (work_b / t_b) = (work_a / work_b) x (t_b / t_a).
Estimate rate_ratio(const Measurement& a, double work_a, const Measurement& b, double work_b, double confidence);

// The same ratio from pairs: `a` carries its reference's samples timed in the same iterations
// (Measurement::reference_samples_ms); the value is the median of the per-iteration ratios
// (work_a / a_i) / (work_ref / ref_i), the interval a percentile bootstrap of that median over
// iterations. Clocks that move between iterations move both sides of a pair. Invalid without
// aligned reference samples.
Estimate paired_rate_ratio(const Measurement& a, double work_a, double work_ref, double confidence);
// a / b from samples timed in the same iterations (a[i] and b[i] from iteration i, e.g.
// harness::Runner::time_round_robin): the median of the per-iteration ratios a_i / b_i, the
// interval a percentile bootstrap of that median over iterations. Invalid with fewer than 2
// aligned positive pairs.
Estimate paired_ratio(const std::vector<double>& a, const std::vector<double>& b, double confidence);
// paired_rate_ratio when `a` was timed against `reference`, else rate_ratio (separate runs).
Estimate rate_ratio_to_reference(const Measurement& a, double work_a, const Measurement& reference, double work_ref,
                                 double confidence);

}  // namespace layerbench::reports
