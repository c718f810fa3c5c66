#include "stats/sequential.hpp"

#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

namespace layerbench::stats {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

void check_alpha_tau(double alpha, double tau) {
  if (!(alpha > 0 && alpha < 1)) throw std::invalid_argument(fmt::format("sequential alpha {} not in (0, 1)", alpha));
  if (!(tau > 0) || !std::isfinite(tau)) throw std::invalid_argument(fmt::format("sequential tau {} must be > 0", tau));
}

std::string g(double v) { return std::isfinite(v) ? fmt::format("{:+.4g}", v) : (v > 0 ? "+inf" : "-inf"); }

}  // namespace

double tau_for_pairs(double m, double alpha) {
  if (!(m >= 1) || !std::isfinite(m)) throw std::invalid_argument(fmt::format("tune pairs {} must be >= 1", m));
  if (!(alpha > 0 && alpha < 1)) throw std::invalid_argument(fmt::format("sequential alpha {} not in (0, 1)", alpha));
  const double l = -2 * std::log(alpha);
  return std::sqrt((l + std::log(l + 1)) / m);
}

double log_mixture_martingale(std::size_t n, double s1, double s2, double tau) {
  if (n < 2) return 0;  // one delta carries no scale-free information: M_1 = 1
  const double nt = static_cast<double>(n) * tau * tau;
  if (!(s2 > 0)) return 0;  // every delta equals mu0
  // r * S1^2 / S2 with r = tau^2 / (1 + n tau^2); S1^2 <= n S2, so the argument stays below 1.
  const double x = std::min(tau * tau / (1 + nt) * s1 * s1 / s2, 1.0);
  if (x >= 1) {
    // Every delta equals the same non-mu0 value: M = (1 + n tau^2)^((n - 1) / 2).
    return 0.5 * (static_cast<double>(n) - 1) * std::log1p(nt);
  }
  return -0.5 * std::log1p(nt) - 0.5 * static_cast<double>(n) * std::log1p(-x);
}

Interval confidence_sequence(std::size_t n, double mean, double sd, double alpha, double tau) {
  check_alpha_tau(alpha, tau);
  if (n < 2 || !std::isfinite(mean) || !std::isfinite(sd)) return {-inf, inf};
  const double nd = static_cast<double>(n);
  const double nt = nd * tau * tau;
  // q = (1 + n tau^2) / tau^2 * (1 - (alpha^2 / (1 + n tau^2))^(1/n)), in logs for small alpha.
  const double q = (1 + nt) / (tau * tau) * -std::expm1((2 * std::log(alpha) - std::log1p(nt)) / nd);
  if (!(q < nd)) return {-inf, inf};
  const double half = sd / std::sqrt(nd) * std::sqrt((nd - 1) * q / (nd - q));
  return {mean - half, mean + half};
}

ConfidenceSequence::ConfidenceSequence(double alpha, double tau) : alpha_(alpha), tau_(tau) {
  check_alpha_tau(alpha, tau);
}

void ConfidenceSequence::add(double delta) {
  if (!std::isfinite(delta)) throw std::invalid_argument("sequential: non-finite delta");
  ++n_;
  const double d = delta - mean_;
  mean_ += d / static_cast<double>(n_);
  m2_ += d * (delta - mean_);
}

double ConfidenceSequence::sd() const {
  return n_ < 2 ? nan_value : std::sqrt(std::max(m2_, 0.0) / static_cast<double>(n_ - 1));
}

Interval ConfidenceSequence::interval() const { return confidence_sequence(n_, mean_, sd(), alpha_, tau_); }

double SequentialDesign::effective_tau() const { return tau > 0 ? tau : tau_for_pairs(tune_pairs, alpha); }

std::string_view to_string(SequentialStop stop) {
  switch (stop) {
    case SequentialStop::running: return "running";
    case SequentialStop::effect: return "effect";
    case SequentialStop::equivalence: return "equivalence";
    case SequentialStop::max_pairs: return "max_pairs";
  }
  return "running";
}

SequentialStop parse_sequential_stop(std::string_view text) {
  for (auto s : {SequentialStop::running, SequentialStop::effect, SequentialStop::equivalence,
                 SequentialStop::max_pairs}) {
    if (text == to_string(s)) return s;
  }
  throw std::invalid_argument(fmt::format("unknown sequential stop '{}'", text));
}

SequentialResult sequential_decision(std::span<const double> base, std::span<const double> candidate,
                                     const SequentialDesign& design) {
  if (base.size() != candidate.size()) throw std::invalid_argument("sequential: base and candidate differ in length");
  if (!(design.equivalence >= 0) || !std::isfinite(design.equivalence)) {
    throw std::invalid_argument("sequential: equivalence margin must be finite and >= 0");
  }
  if (design.min_pairs < 2) throw std::invalid_argument("sequential: min_pairs must be at least 2");
  if (!(design.effect_margin >= 0) || !std::isfinite(design.effect_margin)) {
    throw std::invalid_argument("sequential: effect margin must be finite and >= 0");
  }
  SequentialResult r;
  r.design = design;
  const double tau = design.effective_tau();
  ConfidenceSequence cs(design.alpha, tau);
  double base_sum = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    if (!std::isfinite(base[i]) || !std::isfinite(candidate[i])) throw std::invalid_argument("sequential: non-finite value");
    cs.add(candidate[i] - base[i]);
    base_sum += base[i];
    r.pairs = cs.n();
    r.mean = cs.mean();
    r.base_mean = base_sum / static_cast<double>(r.pairs);
    r.interval = cs.interval();
    const double scale = design.equivalence_relative ? std::fabs(r.base_mean) : 1.0;
    r.margin = design.equivalence == 0 ? nan_value : design.equivalence * scale;
    r.effect_margin = design.effect_margin * scale;
    const bool decide = r.pairs >= design.min_pairs;
    const bool beyond = r.effect_margin > 0 ? r.interval.low > r.effect_margin || r.interval.high < -r.effect_margin
                                            : !r.interval.contains(0.0);
    if (decide && beyond && std::isfinite(r.interval.low)) {
      r.stop = SequentialStop::effect;
    } else if (decide && r.margin > 0 && r.interval.low > -r.margin && r.interval.high < r.margin) {
      r.stop = SequentialStop::equivalence;
    } else if (design.max_pairs > 0 && r.pairs >= design.max_pairs) {
      r.stop = SequentialStop::max_pairs;
    }
    if (r.stop != SequentialStop::running) break;
  }
  return r;
}

std::string sequential_summary(const SequentialResult& r) {
  const int level = static_cast<int>(std::lround(100 * (1 - r.design.alpha)));
  const std::string ci = fmt::format("{}% confidence sequence of the mean delta [{}, {}]", level, g(r.interval.low),
                                     g(r.interval.high));
  const std::string margin = std::isnan(r.margin) ? "" : fmt::format(" (equivalence margin +-{:.4g})", r.margin);
  switch (r.stop) {
    case SequentialStop::effect:
      return fmt::format("Sequential stop after {} pairs: effect, {} {}; {}.", r.pairs, ci,
                         r.effect_margin > 0 ? fmt::format("lies wholly beyond +-{:.4g}", r.effect_margin)
                                             : std::string("excludes 0"),
                         r.mean > 0 ? "the candidate is higher (slower, for times)" : "the candidate is lower (faster, for times)");
    case SequentialStop::equivalence:
      return fmt::format("Sequential stop after {} pairs: equivalence, {} lies inside the margin{}.", r.pairs, ci,
                         margin);
    case SequentialStop::max_pairs:
      return fmt::format("Sequential stop after {} pairs: the pair cap, without a verdict; {}{}.", r.pairs, ci, margin);
    case SequentialStop::running: break;
  }
  return fmt::format("Sequential study still running after {} pairs: {}{}.", r.pairs, ci, margin);
}

std::string sequential_fixed_n_note() {
  return "After a sequential stop the fixed-n tests (t, bootstrap, Wilcoxon, sign) are descriptive: the number of "
         "pairs depended on the data, so their p-values are not the design's error rates (the confidence sequence's "
         "are).";
}

}  // namespace layerbench::stats
