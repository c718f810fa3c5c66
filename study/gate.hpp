#pragma once
// The gate's decision rules (statistics.md 2.8): a change fails CI only when it is significant AND relevant.
//   paired   (interleaved A/B study):  one-sided exact Wilcoxon signed-rank p < alpha, and the one-sided
//            (1 - alpha) bootstrap bound of the relative change of the means beyond the threshold;
//   unpaired (two result files):       two-sided Mann-Whitney U p < alpha, and the (1 - alpha) bootstrap
//            interval of the ratio of medians entirely beyond the threshold.
// Improvements are judged by the same rule in the other direction. When the sample is too small for any
// outcome to reach alpha (the exact tests' p floor) the verdict is "inconclusive: need >= N".
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "stats/common.hpp"
#include "stats/sequential.hpp"

#include <optional>

namespace layerbench::gate {

struct GateOptions {
  double threshold = 0.02;        // relevance: relative change that matters (0.02 = 2%)
  double alpha = 0.05;            // significance level of the test and 1 - level of the bound
  bool higher_is_better = false;  // e.g. bandwidth; default: times (lower is better)
  std::size_t resamples = 10000;  // bootstrap resamples
  std::uint64_t seed = 20240531;  // bootstrap seed (results are reproducible for a seed)
};

enum class Verdict { improved, regressed, no_change, inconclusive };
std::string_view to_string(Verdict v);  // the machine-readable name (JSON "verdict")

struct Finding {
  std::string name;
  Verdict verdict = Verdict::no_change;
  bool paired = false;
  std::size_t n_base = 0, n_candidate = 0;  // pairs, or samples per arm
  double base_center = stats::nan_value;   // mean (paired) or median (unpaired) of each arm
  double candidate_center = stats::nan_value;
  double change = stats::nan_value;        // candidate / base - 1 of the centres (+ = larger)
  stats::Interval ci;                      // bootstrap interval of `change`
  double ci_level = 0;                     // coverage of ci (two-sided)
  double p_worse = stats::nan_value;       // paired: one-sided p towards "worse"; unpaired: two-sided p
  double p_better = stats::nan_value;      // paired: one-sided p towards "better"; unpaired: two-sided p
  std::size_t need = 0;                    // minimum n (pairs / per arm) that can reach alpha
  std::string test;                        // which test produced p
  std::string note;                        // e.g. "inconclusive: need >= 5 pairs"
  bool normal_limit = false;               // paired, > stats::kBootstrapMaxPairs pairs: delta-method ci
  // --sequential: the confidence sequence's stop (ci is then its interval of `change`); undecided =
  // the rule has not stopped yet and more pairs may follow (exit code 3).
  std::optional<stats::SequentialResult> sequential;
  bool undecided = false;
};

// Paired rule on base[i] / candidate[i] pairs. Throws std::invalid_argument on length mismatch or
// non-finite values.
Finding gate_paired(std::string name, std::span<const double> base, std::span<const double> candidate,
                    const GateOptions& options);
// Unpaired rule on two independent samples.
Finding gate_unpaired(std::string name, std::span<const double> base, std::span<const double> candidate,
                      const GateOptions& options);

// Sequential rule (stats/sequential.hpp) on pairs in order: stops at the first pair where the
// always-valid confidence sequence of the mean delta excludes 0 or lies inside +-design.equivalence
// (relative), or at design.max_pairs. Regressed / improved when it stopped on an effect and its
// interval of the relative change (delta / base mean) lies wholly beyond the threshold; no change
// on equivalence or a smaller effect; inconclusive at the cap; undecided while it runs.
Finding gate_sequential(std::string name, std::span<const double> base, std::span<const double> candidate,
                        const GateOptions& options, const stats::SequentialDesign& design);

// The verdict the rule gives a computed finding under `options` (threshold, alpha, orientation); lets a
// caller evaluate several thresholds on one finding. Inconclusive findings stay inconclusive.
Verdict verdict_for(const Finding& f, const GateOptions& options);

// What a reader is told: "regressed beyond the threshold", "improved beyond the threshold",
// "significant, size not resolved" (a test is significant but the interval reaches inside the
// threshold), "no change larger than 2%" (not significant, the interval inside +-threshold),
// "inconclusive" (neither: more data needed), or the finding's own note when it is inconclusive.
std::string verdict_label(const Finding& f, const GateOptions& options);

// Smallest number of pairs whose exact one-sided signed-rank p floor (2^-n) is below alpha.
std::size_t min_pairs(double alpha);
// Smallest equal per-arm size whose exact two-sided Mann-Whitney floor 2 / C(2n, n) is below alpha.
std::size_t min_per_arm(double alpha);

// "2%" -> 0.02, "0.5 %" -> 0.005, "0.02" -> 0.02. A bare number is a fraction and must be < 1 (so "2"
// is rejected with a hint rather than read as 200%). Throws std::invalid_argument with the reason.
double parse_threshold(const std::string& text);

}  // namespace layerbench::gate
