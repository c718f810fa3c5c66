#pragma once
// Multiple comparisons: Holm's step-down adjustment (family-wise error rate), as
// statsmodels.stats.multitest.multipletests(p, method="holm") computes it.
#include <span>
#include <vector>

namespace layerbench::stats {

// Adjusted p-values in the order given: sorted ascending, p_(i) * (m - i) for i = 0..m-1, made
// monotone by a running maximum and capped at 1. A NaN p stays NaN and counts in m.
std::vector<double> holm_adjust(std::span<const double> p);

}  // namespace layerbench::stats
