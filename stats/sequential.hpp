#pragma once
// Sequential paired studies: an always-valid confidence sequence for the mean delta, updated after
// every pair, and the stop rule built on it.
//
// The confidence sequence is the scale-invariant normal mixture of Lai (1976), "On confidence
// sequences", Ann. Statist. 4(2):265-280: the likelihood ratio of the scale-invariant reduction
// of the data (equivalently, the Bayes factor with the right-Haar prior d sigma / sigma) mixed
// over a N(0, tau^2) prior on the standardized effect theta = mu / sigma. Perez-Ortiz, Lardy,
// de Heide & Grunwald (2024), "E-statistics, group invariance and anytime-valid testing",
// Ann. Statist. 52(4), show such invariant Bayes factors are test martingales for every sigma.
// For deltas x_1..x_n and a hypothesised mean mu0, with S1 = sum(x - mu0), S2 = sum((x - mu0)^2):
//
//   M_n(mu0) = (1 + n tau^2)^(-1/2) * (1 - tau^2 / (1 + n tau^2) * S1^2 / S2)^(-n/2).
//
// Under mu = mu0 (Gaussian deltas, any sigma) M_n is a non-negative martingale with M_1 = 1, so
// by Ville's inequality P(exists n: M_n(mu) >= 1/alpha) <= alpha. The set {mu0: M_n(mu0) < 1/alpha}
// is an interval around the mean: mean +- s/sqrt(n) * sqrt((n-1) q / (n - q)) with
// q = (1 + n tau^2) / tau^2 * (1 - (alpha^2 / (1 + n tau^2))^(1/n)); it is unbounded while q >= n.
// Because it covers the true mean at every n simultaneously, any stop rule (effect, equivalence,
// a cap, a user's Ctrl-C) keeps the error rate at or below alpha. The guarantee is exact for
// Gaussian deltas; for other shapes it holds approximately (paired deltas of timings are close to
// symmetric; see results/stats/sequential-sim.md for a skewed case).
//
// tau tunes where the sequence is tightest. tau_for_pairs(m, alpha) uses the normal-mixture
// optimum of Howard, Ramdas, McAuliffe & Sekhon (2021), "Time-uniform, nonparametric,
// nonasymptotic confidence sequences", Ann. Statist. 49(2) (the same tuning as Waudby-Smith et
// al., "Time-uniform central limit theory and asymptotic confidence sequences", Ann. Statist. 2024):
// rho^2 = (-2 log alpha + log(-2 log alpha + 1)) / m.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "stats/common.hpp"

namespace layerbench::stats {

// tau of the mixture whose interval is tightest near m pairs (m >= 1, alpha in (0, 1)).
double tau_for_pairs(double m, double alpha);

// log M_n(mu0) for n deltas with S1 = sum(x - mu0) and S2 = sum((x - mu0)^2). 0 when n < 2 or every
// delta equals mu0 (no evidence); (n - 1) / 2 * log(1 + n tau^2) when every delta equals one other value.
double log_mixture_martingale(std::size_t n, double s1, double s2, double tau);

// The confidence sequence at level 1 - alpha after n deltas with the given mean and sample sd.
// Unbounded (-inf, +inf) while the data cannot exclude anything (n < 2, or q >= n).
Interval confidence_sequence(std::size_t n, double mean, double sd, double alpha, double tau);

// Running mean / sd of the deltas (Welford) and the interval after each update.
class ConfidenceSequence {
 public:
  ConfidenceSequence(double alpha, double tau);
  void add(double delta);
  std::size_t n() const { return n_; }
  double mean() const { return mean_; }
  double sd() const;
  Interval interval() const;

 private:
  double alpha_, tau_;
  std::size_t n_ = 0;
  double mean_ = 0, m2_ = 0;
};

// The stop rule of a sequential study.
struct SequentialDesign {
  double alpha = 0.05;
  double tau = 0;                // 0: tau_for_pairs(tune_pairs, alpha)
  double tune_pairs = 10;        // where the interval is tightest when tau == 0
  std::size_t max_pairs = 0;     // 0 = no cap
  std::size_t min_pairs = 2;     // no decision before this many pairs
  // Stop for equivalence when the interval lies strictly inside (-margin, +margin). margin is a
  // fraction of the running base mean when relative (0.05 = 5%), else in the metric's unit;
  // 0 = no equivalence stop.
  double equivalence = 0;
  bool equivalence_relative = true;
  // Stop for an effect when the interval lies wholly beyond +-effect_margin (same unit as the
  // equivalence margin); 0 = when it excludes 0. A gate uses its relevance threshold here.
  double effect_margin = 0;
  double effective_tau() const;
};

enum class SequentialStop { running, effect, equivalence, max_pairs };
std::string_view to_string(SequentialStop stop);
SequentialStop parse_sequential_stop(std::string_view text);  // throws std::invalid_argument

// Where a sequential study stands after its deltas (candidate - base, in pair order).
struct SequentialResult {
  SequentialDesign design;
  SequentialStop stop = SequentialStop::running;
  std::size_t pairs = 0;   // pairs used: at the stop, or all of them while running
  double mean = nan_value;  // mean delta over those pairs
  double base_mean = nan_value;
  Interval interval;        // the confidence sequence at `pairs`
  double margin = nan_value;  // equivalence margin in the metric's unit at `pairs` (NaN: none)
  double effect_margin = 0;   // effect margin in the metric's unit at `pairs`
};

// Replays the pairs one at a time and stops at the first pair where the rule fires: interval
// excludes 0, or lies wholly beyond +-effect_margin (effect), interval inside +-margin
// (equivalence), or pairs == max_pairs. Pairs after
// the stop are ignored, so a resumed study stops where an uninterrupted one did. Throws
// std::invalid_argument for mismatched lengths, non-finite values or an invalid design.
SequentialResult sequential_decision(std::span<const double> base, std::span<const double> candidate,
                                     const SequentialDesign& design);

// One sentence for a report: the stop, the pairs and the interval, and what the fixed-n p-values
// mean after a sequential stop.
std::string sequential_summary(const SequentialResult& r);
std::string sequential_fixed_n_note();

}  // namespace layerbench::stats
