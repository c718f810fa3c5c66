#pragma once
// Descriptive summaries of a sample: the figures every timing table reports.
#include <span>
#include <vector>

namespace layerbench::stats {

// Type-7 (linear interpolation) quantile of an already sorted sample, p in [0, 1].
double quantile_sorted(std::span<const double> sorted, double p);
// Type-7 quantile of an unsorted sample (copies and sorts).
double quantile(std::span<const double> x, double p);

struct Summary {
  std::size_t n = 0;
  double mean = 0, median = 0, min = 0, max = 0, sd = 0, p10 = 0, p90 = 0;
  double cv = 0;  // sd / mean (0 when mean == 0)
};
// NaN-free summary of a non-empty sample; sd uses n-1 (0 for n == 1).
Summary summarize(std::span<const double> x);

}  // namespace layerbench::stats
