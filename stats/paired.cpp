#include "stats/paired.hpp"

#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace layerbench::stats {

PairedAnalysis analyze_paired(std::span<const double> base, std::span<const double> candidate,
                              const PairedOptions& o) {
  if (base.size() != candidate.size()) throw std::invalid_argument("base and candidate differ in length");
  if (base.size() < 2) throw std::invalid_argument("need at least 2 pairs");
  if (!(o.confidence > 0 && o.confidence < 1)) throw std::invalid_argument("confidence must be in (0, 1)");
  for (std::size_t i = 0; i < base.size(); ++i) {
    if (!std::isfinite(base[i]) || !std::isfinite(candidate[i])) {
      throw std::invalid_argument(fmt::format("pair {} is not finite", i));
    }
  }
  PairedAnalysis a;
  a.n = base.size();
  a.alpha = 1 - o.confidence;
  a.base = summarize(base);
  a.candidate = summarize(candidate);
  a.deltas.resize(a.n);
  for (std::size_t i = 0; i < a.n; ++i) a.deltas[i] = candidate[i] - base[i];
  const auto dsum = summarize(a.deltas);

  auto pct = [&](double v) { return a.base.mean != 0 ? 100.0 * v / a.base.mean : nan_value; };
  a.delta.mean = dsum.mean;
  a.delta.median = dsum.median;
  a.delta.trim = o.trim;
  a.delta.trimmed_mean = trimmed_mean(a.deltas, o.trim);
  a.delta.sd = dsum.sd;
  a.delta.se = dsum.sd / std::sqrt(static_cast<double>(a.n));
  a.delta.mean_pct = pct(a.delta.mean);
  a.delta.median_pct = pct(a.delta.median);
  a.delta.trimmed_mean_pct = pct(a.delta.trimmed_mean);

  a.t = t_test(a.deltas, o.confidence);

  BootstrapOptions bo;
  bo.resamples = o.resamples;
  bo.seed = o.seed;
  bo.confidence = o.confidence;
  bo.num_threads = o.num_threads;
  if (a.n > kBootstrapMaxPairs) {
    a.bootstrap = normal_limit_mean_median(a.deltas, o.confidence);
    a.normal_limit = true;
  } else {
    a.bootstrap = bootstrap_mean_median(a.deltas, bo);
  }
  for (const auto& w : a.bootstrap.mean.warnings) a.warnings.push_back("mean delta " + w);
  for (const auto& w : a.bootstrap.median.warnings) a.warnings.push_back("median delta " + w);

  const auto ranked = round_for_ranking(a.deltas, o.rank_digits);
  WilcoxonOptions wo;
  wo.zero_method = o.zero_method;
  wo.continuity = o.continuity;
  a.wilcoxon = wilcoxon_signed_rank(ranked, wo);
  a.sign = sign_test(ranked);

  a.fences = tukey_fences(a.deltas);
  a.outliers = tukey_outliers(a.deltas, a.fences);

  a.drift.base = spearman_trend(base);
  a.drift.delta = spearman_trend(a.deltas);
  if (a.drift.base.p < a.alpha) {
    a.warnings.push_back(fmt::format("drift: the base arm trends with pair index (Spearman rho={:.3f}, p={:.3g})",
                                     a.drift.base.rho, a.drift.base.p));
  }
  if (a.drift.delta.p < a.alpha) {
    a.warnings.push_back(fmt::format("drift: the delta trends with pair index (Spearman rho={:.3f}, p={:.3g})",
                                     a.drift.delta.rho, a.drift.delta.p));
  }
  if (o.predicted) {
    const double d = *o.predicted;
    a.predicted = PredictedResult{d, d != 0 ? a.delta.mean / d : nan_value,
                                  d != 0 ? a.delta.median / d : nan_value, {}};
    const auto& boot = a.bootstrap.mean.percentile;
    const Interval mean_ci = std::isfinite(boot.low) && std::isfinite(boot.high) ? boot : a.t.ci;
    a.predicted->check = check_prediction(a.delta.mean, mean_ci, a.delta.se, static_cast<double>(a.n - 1), d,
                                          o.predicted_half_width, o.confidence);
  }
  a.guidance = reading_guidance(a);
  return a;
}

}  // namespace layerbench::stats
