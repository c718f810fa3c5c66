// layerbench-gate-sim: measures the gate itself on simulated studies with known truth.
//   A/A (no change): the fraction of studies the gate calls "regressed" is its false-alarm rate (must be <= alpha);
//   A/B (a real slowdown of --effect): the fraction called "regressed" is its power.
// Model of one run: mu * (1 + drift_i) * (1 + cv * e), e ~ N(0, 1); drift_i ~ N(0, drift) is shared by both arms
// of pair i (machine state that interleaving cancels); the candidate is multiplied by (1 + effect).
// The unpaired rows draw independent samples without drift (one warm process per arm, as a benchmark run).
#include "common/cli/app.hpp"
#include "study/gate.hpp"
#include "common/cli.hpp"
#include "reports/table.hpp"
#include "stats/tests.hpp"
#include "stats/wilcoxon.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace lg = layerbench::gate;
namespace lr = layerbench::reports;

namespace {

struct SimConfig {
  std::size_t studies = 2000;
  std::size_t pairs = 20;
  double cv = 0.01;
  double drift = 0.02;
  double effect = 0.02;
  double alpha = 0.05;
  std::size_t resamples = 2000;
  std::uint64_t seed = 1;
  std::vector<double> thresholds = {0.0, 0.005, 0.01, 0.02};
};

struct Tally {
  std::vector<std::size_t> regressed, improved;  // per threshold
  std::size_t inconclusive = 0;
};

// Runs `studies` simulated studies and counts verdicts at every threshold (one gate evaluation per study).
Tally simulate(const SimConfig& c, bool paired, double effect, std::size_t n, std::uint64_t stream) {
  std::mt19937_64 rng(c.seed * 1000003 + stream);
  std::normal_distribution<double> z(0.0, 1.0);
  Tally t{std::vector<std::size_t>(c.thresholds.size()), std::vector<std::size_t>(c.thresholds.size()), 0};
  std::vector<double> base(n), cand(n);
  lg::GateOptions o;
  o.alpha = c.alpha;
  o.resamples = c.resamples;
  o.threshold = 0;
  for (std::size_t s = 0; s < c.studies; ++s) {
    for (std::size_t i = 0; i < n; ++i) {
      const double drift = paired ? c.drift * z(rng) : 0.0;
      base[i] = 100.0 * (1 + drift) * (1 + c.cv * z(rng));
      cand[i] = 100.0 * (1 + effect) * (1 + drift) * (1 + c.cv * z(rng));
    }
    o.seed = c.seed + s;
    const auto f = paired ? lg::gate_paired("sim", base, cand, o) : lg::gate_unpaired("sim", base, cand, o);
    if (f.verdict == lg::Verdict::inconclusive) {
      ++t.inconclusive;
      continue;
    }
    for (std::size_t k = 0; k < c.thresholds.size(); ++k) {
      lg::GateOptions ok = o;
      ok.threshold = c.thresholds[k];
      const auto v = lg::verdict_for(f, ok);
      t.regressed[k] += v == lg::Verdict::regressed;
      t.improved[k] += v == lg::Verdict::improved;
    }
  }
  return t;
}

// Size of the exact one-sided signed-rank test at alpha for n untied pairs: the largest attainable p below
// alpha. It bounds the A/A false-alarm rate of the paired rule at threshold 0 (the bound only removes alarms).
double exact_size(std::size_t n, double alpha) {
  const auto counts = layerbench::stats::signed_rank_counts(n);
  double tail = 0, size = 0;
  for (std::size_t s = counts.size(); s-- > 0;) {
    tail += std::ldexp(static_cast<double>(counts[s]), -static_cast<int>(n));
    if (tail < alpha) size = tail;
    else break;
  }
  return size;
}

std::string rate(std::size_t k, std::size_t n) {
  const auto b = layerbench::stats::binomial_test(k, n, 0.5);
  return fmt::format("{:.4f} [{:.4f}, {:.4f}]", static_cast<double>(k) / static_cast<double>(n), b.ci.low, b.ci.high);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"layerbench-gate-sim: false-alarm rate and power of layerbench-gate on simulated studies"};
  layerbench::cli::init_app(app, "layerbench-gate-sim");
  SimConfig c;
  namespace cli = layerbench::cli;
  using layerbench::num::RealRange;
  cli::add_int(app, "--studies", c.studies, "simulated studies per row", std::size_t{100}, std::size_t{1000000});
  cli::add_int(app, "--pairs", c.pairs, "pairs per paired study (samples per arm when unpaired)", std::size_t{2},
               std::size_t{10000});
  cli::add_real(app, "--cv", c.cv, "per-run coefficient of variation", RealRange::non_negative(1));
  cli::add_real(app, "--drift", c.drift, "sd of the per-pair drift shared by both arms (paired model)",
                RealRange::non_negative(1));
  cli::add_real(app, "--effect", c.effect, "true relative slowdown of the candidate in the power rows",
                RealRange::open(-1, 10));
  cli::add_real(app, "--alpha", c.alpha, "significance level", RealRange::closed(1e-6, 0.5));
  cli::add_int(app, "--resamples", c.resamples, "bootstrap resamples per study", std::size_t{500}, std::size_t{1000000});
  cli::add_int(app, "--seed", c.seed, "simulation seed");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : layerbench::kExitUsage;
  }

  std::ostringstream cmd;
  for (int i = 0; i < argc; ++i) cmd << (i ? " " : "") << (i == 0 ? "layerbench-gate-sim" : argv[i]);
  fmt::print("Simulation: `{}`\n\n", cmd.str());
  fmt::print("Model: run = 100 × (1 + drift_i) × (1 + {} · e); drift_i ~ N(0, {}) shared by the two arms of pair i "
             "(paired rows only); alpha = {}; {} bootstrap resamples per study; {} studies per row. Rates are the "
             "fraction of studies with that verdict, with a 95% Clopper-Pearson interval.\n\n",
             c.cv, c.drift, c.alpha, c.resamples, c.studies);

  lr::Table t;
  t.headers = {"design", "truth", "n", "threshold", "P(regressed)", "P(improved)", "requirement", "met"};
  t.align = {lr::Align::left, lr::Align::left, lr::Align::right, lr::Align::right, lr::Align::right, lr::Align::right,
             lr::Align::left, lr::Align::left};
  bool all_met = true;
  const auto rows = [&](bool paired, double effect, std::size_t n, std::uint64_t stream) {
    const auto tally = simulate(c, paired, effect, n, stream);
    for (std::size_t k = 0; k < c.thresholds.size(); ++k) {
      const double p_reg = static_cast<double>(tally.regressed[k]) / static_cast<double>(c.studies);
      std::string req = "—", met = "";
      const bool primary = n == c.pairs;
      if (effect == 0 && paired && !primary) {
        req = fmt::format("informational (exact test size {:.4f})", exact_size(n, c.alpha));
      } else if (effect == 0) {
        req = fmt::format("false alarm ≤ {}", c.alpha);
        met = p_reg <= c.alpha ? "yes" : "NO";
        all_met = all_met && p_reg <= c.alpha;
      } else if (paired && primary && c.thresholds[k] <= 0.01) {
        req = "power ≥ 0.8";
        met = p_reg >= 0.8 ? "yes" : "NO";
        all_met = all_met && p_reg >= 0.8;
      } else if (paired && primary) {
        req = "(threshold = effect: the bound clears it with prob. ≈ alpha by design)";
      }
      t.add_row({paired ? "paired" : "unpaired", effect == 0 ? "A/A" : fmt::format("+{:.1f}% slower", 100 * effect),
                 std::to_string(n), lr::fmt_percent(c.thresholds[k], 1), rate(tally.regressed[k], c.studies),
                 rate(tally.improved[k], c.studies), req, met});
    }
  };
  rows(true, 0.0, c.pairs, 1);
  rows(true, c.effect, c.pairs, 2);
  rows(true, 0.0, 6, 3);
  rows(false, 0.0, c.pairs, 4);
  rows(false, c.effect, c.pairs, 5);
  fmt::print("{}\n", lr::to_markdown(t));
  fmt::print("All requirements met: {}\n", all_met ? "yes" : "NO");
  return all_met ? 0 : 1;
}
