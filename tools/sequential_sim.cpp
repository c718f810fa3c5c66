// Simulation of sequential A/B studies (developer benchmark, not installed): error rate, power and
// pairs of `layerbench-ab run --sequential` against the fixed-n plan and against naive peeking.
// Prints markdown; results/stats/sequential-sim.md holds its output.
//
//   layerbench-sequential-sim [--studies 2000] [--seed 20261201]
//
// Model: every run's time is mean * (1 + cv * Z) with independent Z ~ N(0, 1) (1% CV by default;
// base mean 1, candidate mean 1 + effect). A skewed variant draws exp(cv * Z) - 1 with an occasional
// +10% straggler.
#include "common/cli/version.hpp"

#include <string_view>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <random>
#include <string>
#include <vector>

#include "stats/power.hpp"
#include "stats/sequential.hpp"
#include "stats/tests.hpp"
#include "stats/wilcoxon.hpp"

namespace ls = layerbench::stats;

namespace {

constexpr double alpha = 0.05;

struct Scenario {
  double effect = 0;  // candidate mean = 1 + effect
  double cv = 0.01;
  bool skewed = false;
};

struct PairSource {
  Scenario s;
  std::mt19937_64 rng;
  std::normal_distribution<double> z{0.0, 1.0};
  std::uniform_real_distribution<double> u{0.0, 1.0};
  double run(double mean) {
    if (!s.skewed) return mean * (1 + s.cv * z(rng));
    const double straggler = u(rng) < 0.03 ? 0.10 : 0.0;
    return mean * (std::exp(s.cv * z(rng)) + straggler);
  }
  std::pair<double, double> next() {
    const double b = run(1.0);
    return {b, run(1.0 + s.effect)};
  }
};

struct Tally {
  std::size_t studies = 0, effect_right = 0, effect_wrong = 0, equivalence = 0, capped = 0;
  std::vector<double> pairs;
  double mean_pairs() const {
    double t = 0;
    for (double p : pairs) t += p;
    return pairs.empty() ? 0 : t / static_cast<double>(pairs.size());
  }
  double quantile(double q) const {
    auto v = pairs;
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
  }
};

std::string rate(std::size_t k, std::size_t n) {
  const auto b = ls::binomial_test(k, n, 0.5, ls::Alternative::two_sided, 0.95);
  return fmt::format("{:.4f} [{:.4f}, {:.4f}]", static_cast<double>(k) / static_cast<double>(n), b.ci.low, b.ci.high);
}

// Sign of the true effect in delta = base - candidate: a slower candidate gives negative deltas.
int true_sign(const Scenario& s) { return s.effect > 0 ? -1 : s.effect < 0 ? 1 : 0; }

Tally run_sequential(const Scenario& s, const ls::SequentialDesign& d, std::size_t studies, std::uint64_t seed) {
  Tally t;
  t.studies = studies;
  PairSource src{s, std::mt19937_64(seed)};
  std::vector<double> base, candidate;
  for (std::size_t k = 0; k < studies; ++k) {
    base.clear();
    candidate.clear();
    ls::SequentialResult r;
    // Feed pairs until the rule stops (sequential_decision replays from the start; a running
    // ConfidenceSequence gives the same answer and is what the check below uses for speed).
    ls::ConfidenceSequence cs(d.alpha, d.effective_tau());
    double base_sum = 0;
    std::size_t n = 0;
    ls::SequentialStop stop = ls::SequentialStop::running;
    ls::Interval ci;
    while (stop == ls::SequentialStop::running) {
      const auto [b, c] = src.next();
      base.push_back(b);
      candidate.push_back(c);
      cs.add(b - c);
      base_sum += b;
      ++n;
      ci = cs.interval();
      const double margin = d.equivalence * base_sum / static_cast<double>(n);
      if (n >= d.min_pairs && std::isfinite(ci.low) && !ci.contains(0.0)) stop = ls::SequentialStop::effect;
      else if (n >= d.min_pairs && d.equivalence > 0 && ci.low > -margin && ci.high < margin)
        stop = ls::SequentialStop::equivalence;
      else if (n >= d.max_pairs) stop = ls::SequentialStop::max_pairs;
    }
    if (k < 20) {  // the fast path must agree with the library's stop rule
      r = ls::sequential_decision(base, candidate, d);
      if (r.stop != stop || r.pairs != n) {
        std::fprintf(stderr, "internal error: running and replayed stop rules disagree\n");
        std::exit(1);
      }
    }
    t.pairs.push_back(static_cast<double>(n));
    if (stop == ls::SequentialStop::effect) {
      const int sign = cs.mean() > 0 ? 1 : -1;
      (true_sign(s) == 0 || sign == true_sign(s) ? t.effect_right : t.effect_wrong)++;
    } else if (stop == ls::SequentialStop::equivalence) {
      ++t.equivalence;
    } else {
      ++t.capped;
    }
  }
  return t;
}

// Exact two-sided signed-rank p for untied deltas (continuous data), n <= 62; the normal
// approximation beyond.
class SignedRankP {
 public:
  explicit SignedRankP(std::size_t max_n) {
    for (std::size_t n = 0; n <= std::min<std::size_t>(max_n, 62); ++n) {
      const auto counts = ls::signed_rank_counts(n);
      std::vector<double> cdf(counts.size());
      double total = std::ldexp(1.0, static_cast<int>(n)), acc = 0;
      for (std::size_t w = 0; w < counts.size(); ++w) cdf[w] = (acc += static_cast<double>(counts[w])) / total;
      cdf_.push_back(std::move(cdf));
    }
  }
  double operator()(std::vector<double> d) const {
    const std::size_t n = d.size();
    std::vector<std::size_t> idx(n);
    for (std::size_t i = 0; i < n; ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return std::fabs(d[a]) < std::fabs(d[b]); });
    double w_plus = 0;
    for (std::size_t r = 0; r < n; ++r) w_plus += d[idx[r]] > 0 ? static_cast<double>(r + 1) : 0.0;
    const double nn = static_cast<double>(n);
    if (n < cdf_.size()) {
      const auto& c = cdf_[n];
      const auto w = static_cast<std::size_t>(w_plus);
      const double lower = c[w];
      const double upper = 1 - (w == 0 ? 0 : c[w - 1]);
      return std::min(1.0, 2 * std::min(lower, upper));
    }
    const double mean = nn * (nn + 1) / 4, var = nn * (nn + 1) * (2 * nn + 1) / 24;
    return std::erfc(std::fabs(w_plus - mean) / std::sqrt(var) / std::sqrt(2.0));
  }

 private:
  std::vector<std::vector<double>> cdf_;
};

// Naive peeking: a fixed-n Wilcoxon test after every pair from `first` on, stop at p < alpha.
Tally run_peeking(const Scenario& s, std::size_t first, std::size_t cap, std::size_t studies, std::uint64_t seed,
                  const SignedRankP& p_of) {
  Tally t;
  t.studies = studies;
  PairSource src{s, std::mt19937_64(seed)};
  for (std::size_t k = 0; k < studies; ++k) {
    std::vector<double> d;
    bool stopped = false;
    while (!stopped && d.size() < cap) {
      const auto [b, c] = src.next();
      d.push_back(b - c);
      if (d.size() >= first && p_of(d) < alpha) stopped = true;
    }
    t.pairs.push_back(static_cast<double>(d.size()));
    if (stopped) {
      double m = 0;
      for (double v : d) m += v;
      (true_sign(s) == 0 || (m > 0 ? 1 : -1) == true_sign(s) ? t.effect_right : t.effect_wrong)++;
    } else {
      ++t.capped;
    }
  }
  return t;
}

double delta_sd(const Scenario& s) { return s.cv * std::sqrt(1 + (1 + s.effect) * (1 + s.effect)); }

}  // namespace

int main(int argc, char** argv) {
  std::size_t studies = 2000;
  std::uint64_t seed = 20261201;
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--version") {
      std::puts(layerbench::cli::version_text("layerbench-sequential-sim").c_str());
      return 0;
    }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--studies") studies = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  if (studies < 10) {
    std::fprintf(stderr, "usage: layerbench-sequential-sim [--studies N>=10] [--seed S]\n");
    return 2;
  }
  constexpr std::size_t cap = 100;
  ls::SequentialDesign d;
  d.alpha = alpha;
  d.tune_pairs = 10;
  d.max_pairs = cap;
  const SignedRankP p_of(cap);

  fmt::print("# Sequential A/B studies: simulation\n\n");
  fmt::print("`layerbench-sequential-sim --studies {} --seed {}`. Every run's time is mean x (1 + 0.01 Z), "
             "Z ~ N(0, 1) (1% CV per run; base mean 1); two-sided alpha = {}; cap {} pairs; the confidence "
             "sequence is tuned with `--tune-pairs {}` (tau = {:.4f}). Rates carry their 95% Clopper-Pearson "
             "interval.\n\n",
             studies, seed, alpha, cap, d.tune_pairs, d.effective_tau());

  const Scenario aa{0.0, 0.01, false};
  const auto seq_aa = run_sequential(aa, d, studies, seed + 1);
  const auto peek_aa = run_peeking(aa, 2, cap, studies, seed + 1, p_of);
  auto d_eq = d;
  d_eq.equivalence = 0.05;
  const auto seq_aa_eq = run_sequential(aa, d_eq, studies, seed + 1);
  const Scenario skew{0.0, 0.01, true};
  const auto seq_skew = run_sequential(skew, d, studies, seed + 2);

  fmt::print("## A/A: false alarms (a stop that declares an effect)\n\n");
  fmt::print("| procedure | false-alarm rate [95% CI] | mean pairs |\n|---|---|---|\n");
  fmt::print("| sequential (confidence sequence), no equivalence stop | {} | {:.1f} |\n",
             rate(seq_aa.effect_right + seq_aa.effect_wrong, studies), seq_aa.mean_pairs());
  fmt::print("| sequential, `--equivalence 5%` | {} | {:.1f} (equivalence stops: {}) |\n",
             rate(seq_aa_eq.effect_right + seq_aa_eq.effect_wrong, studies), seq_aa_eq.mean_pairs(),
             rate(seq_aa_eq.equivalence, studies));
  fmt::print("| sequential, skewed runs (log-normal, 3% stragglers +10%) | {} | {:.1f} |\n",
             rate(seq_skew.effect_right + seq_skew.effect_wrong, studies), seq_skew.mean_pairs());
  fmt::print("| naive peeking: exact Wilcoxon after every pair (from pair 2; p < {} is reachable from pair 6), "
             "stop at p < {} | {} | {:.1f} |\n\n",
             alpha, alpha, rate(peek_aa.effect_right + peek_aa.effect_wrong, studies), peek_aa.mean_pairs());

  fmt::print("## +2% (candidate slower by 2%, 1% CV per run): power and pairs\n\n");
  const Scenario slow{0.02, 0.01, false};
  const double sd = delta_sd(slow);
  const auto plan90 = ls::plan_paired(sd, 0.02, alpha, 0.9);
  fmt::print("Fixed-n plan (`layerbench-ab plan --sd {:.5f} --effect 0.02 --power 0.9`, the true sd of the "
             "deltas): {} pairs (exact noncentral t: {:.2f}).\n\n",
             sd, plan90.recommended, plan90.n_exact);
  fmt::print("| procedure | power [95% CI] | wrong-sign stops | capped | mean pairs | median | p90 | "
             "mean / plan(0.9) | plan at the measured power (lower CI bound) | mean / that plan |\n"
             "|---|---|---|---|---|---|---|---|---|---|\n");
  struct Variant {
    double tune;
    std::size_t cap;
  };
  for (const Variant v : {Variant{4, cap}, Variant{10, cap}, Variant{30, cap}, Variant{10, 12}, Variant{10, 10}}) {
    auto dt = d;
    dt.tune_pairs = v.tune;
    dt.max_pairs = v.cap;
    const auto t = run_sequential(slow, dt, studies, seed + 3);
    const auto ci = ls::binomial_test(t.effect_right, studies, 0.5, ls::Alternative::two_sided, 0.95).ci;
    const double p_low = std::min(ci.low, 0.9999);
    const auto plan_same = ls::plan_paired(sd, 0.02, alpha, p_low);
    fmt::print("| sequential, `--tune-pairs {:g} --max-pairs {}` | {} | {} | {} | {:.2f} | {:g} | {:g} | {:.2f} | {} "
               "(power {:.4f}) | {:.2f} |\n",
               v.tune, v.cap, rate(t.effect_right, studies), t.effect_wrong, t.capped, t.mean_pairs(),
               t.quantile(0.5), t.quantile(0.9), t.mean_pairs() / static_cast<double>(plan90.recommended),
               plan_same.recommended, p_low, t.mean_pairs() / static_cast<double>(plan_same.recommended));
  }
  const auto peek_slow = run_peeking(slow, 2, cap, studies, seed + 3, p_of);
  fmt::print("| naive peeking (invalid: see A/A) | {} | {} | {} | {:.2f} | {:g} | {:g} | {:.2f} | | |\n\n",
             rate(peek_slow.effect_right, studies), peek_slow.effect_wrong, peek_slow.capped, peek_slow.mean_pairs(),
             peek_slow.quantile(0.5), peek_slow.quantile(0.9),
             peek_slow.mean_pairs() / static_cast<double>(plan90.recommended));

  // The fixed-n design at its own plan, for reference: t test and Wilcoxon at n = plan(0.9).
  {
    PairSource src{slow, std::mt19937_64(seed + 4)};
    std::size_t t_hits = 0, w_hits = 0;
    for (std::size_t k = 0; k < studies; ++k) {
      std::vector<double> dd;
      for (std::size_t i = 0; i < plan90.recommended; ++i) {
        const auto [b, c] = src.next();
        dd.push_back(b - c);
      }
      t_hits += ls::t_test(dd).p < alpha;
      w_hits += p_of(dd) < alpha;
    }
    fmt::print("Fixed-n at the plan's {} pairs, same model: power of the paired t test {}, of the Wilcoxon test {}.\n\n",
               plan90.recommended, rate(t_hits, studies), rate(w_hits, studies));
  }

  fmt::print("## Smaller effects (1% CV per run, `--tune-pairs 10`, cap {})\n\n", 400);
  fmt::print("| effect | plan(0.9) | power [95% CI] | mean pairs | median | p90 | mean / plan(0.9) | plan at the "
             "measured power (lower CI bound) | mean / that plan |\n|---|---|---|---|---|---|---|---|---|\n");
  for (double effect : {0.01, 0.005}) {
    const Scenario sc{effect, 0.01, false};
    auto dl = d;
    dl.max_pairs = 400;
    const auto t = run_sequential(sc, dl, studies, seed + 5);
    const auto p = ls::plan_paired(delta_sd(sc), effect, alpha, 0.9);
    const auto ci = ls::binomial_test(t.effect_right, studies, 0.5, ls::Alternative::two_sided, 0.95).ci;
    const double p_low = std::min(ci.low, 0.9999);
    const auto same = ls::plan_paired(delta_sd(sc), effect, alpha, p_low);
    fmt::print("| +{:g}% | {} | {} | {:.1f} | {:g} | {:g} | {:.2f} | {} (power {:.4f}) | {:.2f} |\n", 100 * effect,
               p.recommended, rate(t.effect_right, studies), t.mean_pairs(), t.quantile(0.5), t.quantile(0.9),
               t.mean_pairs() / static_cast<double>(p.recommended), same.recommended, p_low,
               t.mean_pairs() / static_cast<double>(same.recommended));
  }
  return 0;
}
