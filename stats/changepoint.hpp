#pragma once
// Change points in a performance history: one series of commits, each with its own samples.
//
// Method: a robust two-sample shift scan (a windowed variant of the likelihood-ratio scan for one
// change in location; Page (1954) "Continuous inspection schemes", Biometrika 41; Killick,
// Fearnhead & Eckley (2012) JASA 107 for the multi-change setting) with the Hodges-Lehmann shift
// as the statistic, chosen over E-divisive means (Matteson & James 2014, JASA 109(505), as used
// by Apache Otava and MongoDB, Daly et al. ICPE'20) because it measures better on our simulated
// histories (tools/history_sim.cpp, results/history/): half the false suspicions of Otava's
// defaults at about the same recall and delay, an interval on the step that covers it at its
// nominal level, and a single-commit spike never moves a median.
//
//   * Each commit is one point y_i = ln(median of its samples): a run's median is robust to the
//     run's own outliers, and the log makes steps relative (a 2% step is +0.0198 everywhere).
//   * The noise is estimated from the points themselves, not assumed: commits of one CI run
//     differ by more (or less) than their samples' spread suggests. When every commit has
//     several samples, each point's variance is (kappa * se_i)^2, with se_i the standard error
//     of its own median (1.2533 * 1.4826 * MAD / sqrt(n)) and kappa the robust scale of the
//     standardized successive differences (y_i - y_{i-1}) / sqrt(se_i^2 + se_{i-1}^2) (MAD,
//     Rousseeuw & Croux 1993; first differences are blind to steps and slow drift): a commit
//     whose runs spread more (a noisy machine) weighs less. With single-sample commits, one
//     sigma = 1.4826 * median|y_i - y_{i-1}| / sqrt 2. Both over the `noise_lookback` commits
//     ending with the post window, the difference across the split left out.
//   * Statistic at a split tau between a window of n commits before and m after: the
//     Hodges-Lehmann shift d = median over pairs (post_j - pre_i) and
//     z = d / (sqrt(pi / 3) * sqrt(sum_post var_i / m^2 + sum_pre var_i / n^2)) (the HL
//     estimator's asymptotic variance, Hodges & Lehmann 1963, Ann. Math. Statist. 34, Welch-style
//     for unequal variances). A suspicion needs |z| >= threshold and
//     |exp(d) - 1| >= min_magnitude, and at least min_post commits after the split, so a lone
//     spike (one commit) can never be one.
//   * Step interval: the distribution-free interval of the HL shift from the Mann-Whitney U
//     distribution (order statistics of the pairwise differences; Hollander & Wolfe,
//     "Nonparametric Statistical Methods", 2nd ed., sec. 4.3), normal approximation with
//     continuity correction; reported as a relative change exp(d) - 1.
//   * p-value: the two-sided Mann-Whitney test of the two windows (stats/mann_whitney), for the
//     split as chosen (not adjusted for the scan over splits: the threshold on z carries that).
//   * Commit range: the splits whose two-segment L1 fit (medians) is within a profile-likelihood
//     drop of chi2_1(0.95) = 3.84 of the best one (Laplace errors with scale sigma*sqrt(2/pi)),
//     contiguous around it: the commits among which the step may lie.
// Windows are bounded by already-found change points (a neighbouring step never leaks into the
// estimate of another) and by `window` commits on each side.
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "stats/common.hpp"

namespace layerbench::stats {

struct ChangePointOptions {
  double threshold = 4.0;        // |z| for a suspicion
  double min_magnitude = 0.01;   // relative step below which nothing is reported (1%)
  std::size_t min_post = 3;      // commits after the split before it can be suspected
  std::size_t min_pre = 5;       // commits before it
  std::size_t window = 40;       // commits each side at most
  std::size_t noise_lookback = 60;  // commits (ending with the post window) the noise is estimated from
  double confidence = 0.95;      // level of the step's interval
  // Throws std::invalid_argument on values outside their range.
  void validate() const;
};

// One commit's point: the log of its median and the standard error of that log-median from
// its own samples (0 with a single sample).
struct CommitPoint {
  double y = 0;
  double se = 0;
};
// From one commit's samples (positive, finite; throws std::invalid_argument otherwise).
CommitPoint commit_point(std::span<const double> samples);

struct StepEstimate {
  std::size_t index = 0;      // first commit after the change (index into the series)
  std::size_t range_low = 0;  // the step lies at one of [range_low, range_high] (first-after indices)
  std::size_t range_high = 0;
  std::size_t pre = 0, post = 0;  // window sizes used
  double shift = nan_value;   // HL shift of the log points
  double relative = nan_value;  // exp(shift) - 1: +0.02 = the metric rose by 2%
  Interval interval;          // relative, at options.confidence
  double z = nan_value;
  double p = nan_value;       // two-sided Mann-Whitney p of the two windows
  double sigma = nan_value;   // noise scale of the log points used
};

// The shift estimate at split `index` with windows [begin, index) and [index, end), each
// clipped to options.window commits. Throws std::invalid_argument when a window is empty.
StepEstimate estimate_step(std::span<const CommitPoint> points, std::size_t index, std::size_t begin,
                           std::size_t end, const ChangePointOptions& options);

// Offline: every change point of a whole series (greedy: the strongest split first, then the
// windows re-bounded by the change points found, until no split passes). Sorted by index.
std::vector<StepEstimate> detect_changes(std::span<const CommitPoint> points, const ChangePointOptions& options);

// Online: after a new commit, the strongest split among the last commits (index in
// [max(after, size - max_post), size - min_post]) whose windows start at `after` (the last
// change point found, or 0). Nothing when no split passes.
std::optional<StepEstimate> detect_recent(std::span<const CommitPoint> points, std::size_t after, std::size_t max_post,
                                        const ChangePointOptions& options);

}  // namespace layerbench::stats
