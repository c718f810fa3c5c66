// Simulated CI performance histories (developer benchmark): how layerbench-history's detector,
// with and without confirmation by interleaved pairs, and same-run re-implementations of the
// anchors' defaults (tools/history_anchors.hpp) do on the same histories. Prints markdown;
// results/history/ holds its output.
//
//   layerbench-history-sim [--commits 1000] [--benchmarks 50] [--reps 1] [--seed 20261201]
//                          [--shared 0.5] [--threshold Z] [--max-post 12]
//
// Model (per benchmark): a run's samples are exp(level + r + e_k), k = 1..10, with the run offset
// r ~ N(0, cv) (run-to-run noise, the part CI sees) and e_k ~ N(0, cv/3) within the run; the
// commit's value is the median. cv is drawn per benchmark from the scenario's range. Code
// effects: steps (log shifts) at random commits at least 80 apart; every benchmark also gets
// single-commit spikes (0.5% of commits, +5..20%, not code), slow drift on 1 benchmark in 5
// (+-2% over the history, code) and a noisy-machine period (commits 500-559, cv x 3, every
// benchmark). Confirmation is a sequential paired A/B (stats/sequential, alpha 0.001, tuned for
// 10 pairs, equivalence +-1%, at most 60 pairs) of the commits either side of the suspected
// range on fresh runs; a pair's two runs share an offset N(0, cv * sqrt(shared)) (the machine
// state interleaving cancels) and each has its own N(0, cv * sqrt(1 - shared)).
#include "common/cli/app.hpp"
#include "common/cli/version.hpp"
#include "stats/changepoint.hpp"
#include "stats/sequential.hpp"
#include "stats/summary.hpp"
#include "tools/history_anchors.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace ls = layerbench::stats;
namespace lt = layerbench::tools;

namespace {

struct Scenario {
  std::string name;
  double cv_lo = 0.01, cv_hi = 0.01;
  std::size_t steps = 0;                   // per benchmark
  double step_lo = 0.02, step_hi = 0.02;   // relative sizes
  bool random_sign = false;
};

struct Settings {
  std::size_t commits = 1000, benchmarks = 50, reps = 1, max_post = 24;
  std::uint64_t seed = 20261201;
  double shared = 0.5;
  ls::ChangePointOptions detector;
};

struct Step {
  std::size_t at = 0;
  double shift = 0;  // log
};

struct History {
  double cv = 0;
  std::vector<double> level;  // code level per commit (log), steps and drift
  std::vector<double> value;  // the commit's measured median
  std::vector<ls::CommitPoint> points;
  std::vector<Step> steps;
};

constexpr std::size_t kNoisyBegin = 500, kNoisyEnd = 560;

double cv_at(const History& h, std::size_t c) { return c >= kNoisyBegin && c < kNoisyEnd ? 3 * h.cv : h.cv; }

History make_history(const Scenario& s, const Settings& st, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> z(0, 1);
  History h;
  h.cv = s.cv_lo + (s.cv_hi - s.cv_lo) * u(rng);
  const std::size_t n = st.commits;
  for (std::size_t tries = 0; h.steps.size() < s.steps && tries < 1000; ++tries) {
    const auto at = static_cast<std::size_t>(60 + u(rng) * double(n - 120));
    bool far = true;
    for (const auto& x : h.steps) far &= (at > x.at ? at - x.at : x.at - at) >= 80;
    if (!far) continue;
    const double size = s.step_lo + (s.step_hi - s.step_lo) * u(rng);
    h.steps.push_back({at, std::log1p((s.random_sign && u(rng) < 0.5) ? -size / (1 + size) : size)});
  }
  std::sort(h.steps.begin(), h.steps.end(), [](const Step& a, const Step& b) { return a.at < b.at; });
  const double drift = u(rng) < 0.2 ? (u(rng) < 0.5 ? -1 : 1) * std::log(1.02) / double(n) : 0.0;
  h.level.assign(n, 0.0);
  for (std::size_t c = 0; c < n; ++c) {
    double l = drift * double(c);
    for (const auto& x : h.steps) l += c >= x.at ? x.shift : 0.0;
    h.level[c] = l;
  }
  std::vector<double> samples(10);
  for (std::size_t c = 0; c < n; ++c) {
    const double cv = cv_at(h, c);
    const double spike = u(rng) < 0.005 ? std::log1p(0.05 + 0.15 * u(rng)) : 0.0;
    const double r = cv * z(rng);
    for (auto& v : samples) v = std::exp(h.level[c] + spike + r + cv / 3 * z(rng));
    h.points.push_back(ls::commit_point(samples));
    h.value.push_back(std::exp(h.points.back().y));
  }
  return h;
}

// A sequential paired A/B of commits a (base) and b on fresh runs at the noise of commit `now`.
ls::SequentialResult confirm(const History& h, std::size_t a, std::size_t b, std::size_t now, double shared,
                             double equivalence, std::mt19937_64& rng) {
  std::normal_distribution<double> z(0, 1);
  ls::SequentialDesign d;
  d.alpha = 0.001;
  d.tune_pairs = 10;
  d.max_pairs = 60;
  d.equivalence = equivalence;
  const double cv = cv_at(h, now);
  std::vector<double> base, cand;
  for (std::size_t i = 0; i < d.max_pairs; ++i) {
    const double common = cv * std::sqrt(shared) * z(rng);
    base.push_back(std::exp(h.level[a] + common + cv * std::sqrt(1 - shared) * z(rng)));
    cand.push_back(std::exp(h.level[b] + common + cv * std::sqrt(1 - shared) * z(rng)));
  }
  return ls::sequential_decision(base, cand, d);
}

struct Tally {
  std::size_t commits = 0, steps = 0, found = 0, false_alerts = 0, suspicions = 0, false_suspicions = 0;
  std::size_t steps_noisy = 0, found_noisy = 0;  // steps inside the noisy-machine period
  std::size_t within3 = 0, covered = 0, with_interval = 0, confirmations = 0;
  std::vector<double> delays, pairs_true, pairs_all, pairs_bisect;
  bool has_interval = false, has_pairs = false;
};

// Attributes an alert at `index` (seen when the history had `now` commits) to a step; returns
// whether it was true.
bool attribute(const History& h, std::size_t index, std::size_t now, std::size_t memory, std::vector<char>& found,
               Tally& t, std::size_t range_lo = 1, std::size_t range_hi = 0) {
  for (std::size_t k = 0; k < h.steps.size(); ++k) {
    const std::size_t s = h.steps[k].at;
    const bool near = (index + 1 >= s && index <= s + 1) || (s >= range_lo && s <= range_hi);
    const bool in_memory = memory > 0 && index >= s && index < s + memory;
    if (!(near || in_memory)) continue;
    if (!found[k]) {
      found[k] = 1;
      if (s >= kNoisyBegin && s < kNoisyEnd) {
        ++t.found_noisy;
        return true;
      }
      ++t.found;
      const double delay = double(now - s);
      t.delays.push_back(delay);
      t.within3 += delay <= 3;
    }
    return true;
  }
  ++t.false_alerts;
  return false;
}

enum class Method { ours, ours_confirmed, otava, perfherder, bencher, gab };
const char* name_of(Method m) {
  switch (m) {
    case Method::ours: return "layerbench-history, suspicion only";
    case Method::ours_confirmed: return "layerbench-history, confirmed by pairs";
    case Method::otava: return "Otava defaults (E-divisive, t p<0.001, window 50)";
    case Method::perfherder: return "Perfherder (t>7 over 12/12, >=2%)";
    case Method::bencher: return "Bencher default (t, 64 values, 0.99 upper)";
    case Method::gab: return "github-action-benchmark (2x previous)";
  }
  return "";
}

void run_ours(const History& h, const Settings& st, bool with_confirm, std::mt19937_64& rng, Tally& t) {
  std::vector<char> found(h.steps.size(), 0);
  std::vector<std::pair<std::size_t, std::size_t>> refuted;
  std::vector<std::size_t> cps;
  std::size_t after = 0;
  const std::span<const ls::CommitPoint> all(h.points);
  for (std::size_t n = 1; n <= h.points.size(); ++n) {
    const auto s = ls::detect_recent(all.first(n), after, st.max_post, st.detector);
    if (!s) continue;
    bool skip = false;
    for (const auto& [lo, hi] : refuted) skip |= s->index >= lo && s->index <= hi;
    if (skip) continue;
    ++t.suspicions;
    bool real = false;
    for (const auto& x : h.steps) real |= s->range_low <= x.at + 1 && x.at <= s->range_high + 1;
    t.false_suspicions += !real;
    std::size_t index = s->index, range_lo = 1, range_hi = 0;
    if (with_confirm) {
      const std::size_t a = s->range_low - 1, b = s->range_high;
      const auto r = confirm(h, a, b, n - 1, st.shared, st.detector.min_magnitude, rng);
      ++t.confirmations;
      t.pairs_all.push_back(double(r.pairs));
      if (r.stop != ls::SequentialStop::effect) {
        refuted.emplace_back(s->range_low, s->range_high);
        continue;
      }
      if (real) t.pairs_true.push_back(double(r.pairs));
      // A range of several commits is bisected with the same paired rule (log2 steps); each
      // step only has to tell which side of the confirmed step a commit lies on, so its
      // no-change margin is half the step.
      const double half = std::max(std::abs(r.mean / r.base_mean) / 2, 0.001);
      // A study that reaches its cap undecided ends the bisection: the alert then names the
      // range left, not a culprit.
      std::size_t good = a, bad = b, extra = 0;
      while (bad - good > 1) {
        const std::size_t mid = good + (bad - good) / 2;
        const auto m = confirm(h, good, mid, n - 1, st.shared, half, rng);
        extra += m.pairs;
        if (m.stop == ls::SequentialStop::max_pairs) break;
        (m.stop == ls::SequentialStop::effect ? bad : good) = mid;
      }
      index = bad;
      range_lo = good + 1;
      range_hi = bad;
      if (real) t.pairs_bisect.push_back(double(r.pairs + extra));
    }
    attribute(h, index, n, 0, found, t, range_lo, range_hi);
    cps.push_back(index);
    after = index;
  }
  // Each change point's interval from the whole history, windows bounded by its neighbours.
  for (std::size_t i = 0; i < cps.size(); ++i) {
    const std::size_t lo = i == 0 ? 0 : cps[i - 1];
    const std::size_t hi = i + 1 == cps.size() ? h.points.size() : cps[i + 1];
    for (const auto& x : h.steps) {
      if (!(cps[i] + 1 >= x.at && cps[i] <= x.at + 1)) continue;
      const auto e = ls::estimate_step(all, cps[i], lo, hi, st.detector);
      ++t.with_interval;
      t.covered += e.interval.contains(std::expm1(x.shift));
    }
  }
}

void run_anchor(Method m, const History& h, Tally& t) {
  std::vector<char> found(h.steps.size(), 0);
  std::size_t after = 0;
  const std::span<const double> all(h.value);
  for (std::size_t n = 1; n <= all.size(); ++n) {
    std::optional<lt::AnchorAlert> a;
    std::size_t memory = 0;
    switch (m) {
      case Method::otava: a = lt::otava_online(all.first(n), after); break;
      case Method::perfherder: a = lt::perfherder_online(all.first(n), after); break;
      case Method::bencher:
        a = lt::bencher_online(all.first(n));
        memory = lt::kBencherMemory;
        break;
      case Method::gab: a = lt::gab_online(all.first(n)); break;
      default: break;
    }
    if (!a) continue;
    ++t.suspicions;
    attribute(h, a->index, n, memory, found, t);
    after = a->index;
  }
}

std::string cell_q(const std::vector<double>& v, double p) {
  if (v.empty()) return "—";
  return fmt::format("{:.0f}", ls::quantile(v, p));
}

void print_row(Method m, const Tally& t, std::size_t benchmarks, bool with_name = true) {
  const double per1000 = t.commits ? 1000.0 * double(t.false_alerts) / (double(t.commits) / double(benchmarks)) : 0;
  const std::string found = t.steps ? fmt::format("{:.1f}% ({}/{})", 100.0 * double(t.found) / double(t.steps),
                                                  t.found, t.steps)
                                    : "—";
  const std::string noisy = t.steps_noisy ? fmt::format("{:.0f}% ({}/{})", 100.0 * double(t.found_noisy) / double(t.steps_noisy),
                                                        t.found_noisy, t.steps_noisy)
                                          : "—";
  const std::string delay = t.delays.empty() ? "—"
                                             : fmt::format("{} / {} / {:.0f}%", cell_q(t.delays, 0.5),
                                                           cell_q(t.delays, 0.9),
                                                           100.0 * double(t.within3) / double(t.delays.size()));
  const std::string cover = t.with_interval ? fmt::format("{:.1f}% ({})", 100.0 * double(t.covered) / double(t.with_interval),
                                                          t.with_interval)
                                            : "—";
  const std::string pairs = t.pairs_true.empty() ? (m == Method::ours_confirmed ? "—" : "n/a")
                                                 : fmt::format("{} / {} ({} / {} with bisection)", cell_q(t.pairs_true, 0.5),
                                                               cell_q(t.pairs_true, 0.9), cell_q(t.pairs_bisect, 0.5),
                                                               cell_q(t.pairs_bisect, 0.9));
  const std::string susp = m == Method::ours_confirmed || m == Method::ours
                               ? fmt::format("{:.1f}", 1000.0 * double(t.false_suspicions) /
                                                          (double(t.commits) / double(benchmarks)))
                               : "—";
  if (with_name) fmt::print("| {} ", name_of(m));
  fmt::print("| {:.2f} | {} | {} | {} | {} | {} | {} |\n", per1000, susp, found, noisy, delay, cover, pairs);
}

std::map<Method, Tally> run_scenario(std::size_t si, const Scenario& s, const Settings& st,
                                    const std::vector<Method>& methods) {
  std::map<Method, Tally> tallies;
  for (std::size_t rep = 0; rep < st.reps; ++rep) {
    for (std::size_t b = 0; b < st.benchmarks; ++b) {
      std::mt19937_64 rng(st.seed + 1000003 * si + 7919 * rep + b);
      const History h = make_history(s, st, rng);
      for (Method m : methods) {
        auto& t = tallies[m];
        t.commits += st.commits;
        for (const auto& x : h.steps) (x.at >= kNoisyBegin && x.at < kNoisyEnd ? t.steps_noisy : t.steps) += 1;
        std::mt19937_64 crng(st.seed ^ (0x9E3779B97F4A7C15ULL * (si * 131 + rep * 17 + b + 1)));
        if (m == Method::ours || m == Method::ours_confirmed)
          run_ours(h, st, m == Method::ours_confirmed, crng, t);
        else
          run_anchor(m, h, t);
      }
    }
  }
  return tallies;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"layerbench-history-sim: detectors of CI performance histories on simulated histories"};
  layerbench::cli::init_app(app, "layerbench-history-sim");
  Settings st;
  app.add_option("--commits", st.commits, "commits per history")->check(CLI::Range(200, 100000));
  app.add_option("--benchmarks", st.benchmarks, "benchmarks (series) per history")->check(CLI::Range(1, 10000));
  app.add_option("--reps", st.reps, "histories per scenario")->check(CLI::Range(1, 1000));
  app.add_option("--seed", st.seed, "random seed");
  app.add_option("--shared", st.shared, "share of a run's variance common to both runs of a pair")->check(CLI::Range(0.0, 0.99));
  app.add_option("--threshold", st.detector.threshold, "detector threshold |z|")->check(CLI::Range(1.0, 20.0));
  app.add_option("--max-post", st.max_post, "commits after a split the online scan looks back")->check(CLI::Range(3, 100));
  CLI11_PARSE(app, argc, argv);
  const std::vector<Scenario> scenarios = {
      {"A/A, CV 1%", 0.01, 0.01, 0, 0, 0, false},
      {"A/A, CV 3%", 0.03, 0.03, 0, 0, 0, false},
      {"2% regressions at CV 1% (5 per benchmark)", 0.01, 0.01, 5, 0.02, 0.02, false},
      {"2% regressions at CV 3% (5 per benchmark)", 0.03, 0.03, 5, 0.02, 0.02, false},
      {"mixed: CV 1-3%, steps 1-5% either way (4 per benchmark)", 0.01, 0.03, 4, 0.01, 0.05, true},
  };
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  fmt::print("# layerbench-history-sim\n\n");
  fmt::print("Command: `layerbench-history-sim --commits {} --benchmarks {} --reps {} --seed {} --shared {} --threshold {} "
             "--max-post {}`  \n",
             st.commits, st.benchmarks, st.reps, st.seed, st.shared, st.detector.threshold, st.max_post);
  fmt::print("Build: {}\n\n", layerbench::cli::version_text("layerbench-history-sim"));
  fmt::print("Every row ran on the same histories. Columns: false alerts per 1000 commits across the whole suite "
             "({} benchmarks; an alert is true when it points within 1 commit of a simulated step, or, for "
             "Bencher, at a commit within its 64-value window after one); false suspicions likewise (ours: each one "
             "costs a confirmation); steps found; delay = commits seen from the step on when the alert came "
             "(median / 90th percentile / share within 3); coverage of the step's 95% interval, computed at "
             "the end of the history; pairs the confirmation used on real steps (median / 90th percentile).\n\n",
             st.benchmarks);
  const std::vector<Method> methods = {Method::ours, Method::ours_confirmed, Method::otava, Method::perfherder, Method::bencher,
                            Method::gab};
  const char* header =
      "| method | false alerts / 1000 commits | false suspicions / 1000 commits | steps found | in the noisy period | "
      "delay (commits) | 95% interval coverage | confirmation pairs |\n|---|---|---|---|---|---|---|---|\n";
  for (std::size_t si = 0; si < scenarios.size(); ++si) {
    const auto tallies = run_scenario(si, scenarios[si], st, methods);
    fmt::print("## {}\n\n{}", scenarios[si].name, header);
    for (Method m : methods) print_row(m, tallies.at(m), st.benchmarks);
    fmt::print("\n");
  }
  // The suspicion threshold trades confirmations (false suspicions) against delay.
  fmt::print("## Suspicion threshold against delay: {}, confirmed by pairs\n\n", scenarios[2].name);
  fmt::print("| threshold z | false alerts / 1000 commits | false suspicions / 1000 commits | steps found | in the noisy "
             "period | delay (commits) | 95% interval coverage | confirmation pairs |\n|---|---|---|---|---|---|---|---|\n");
  for (double z : {3.0, 3.5, 4.0, 5.0}) {
    Settings sweep = st;
    sweep.detector.threshold = z;
    const auto t = run_scenario(2, scenarios[2], sweep, {Method::ours_confirmed});
    fmt::print("| {:.1f} ", z);
    print_row(Method::ours_confirmed, t.at(Method::ours_confirmed), st.benchmarks, false);
  }
  fmt::print("\n");
  fmt::print("Run time: {:.0f} s CPU ({:.0f} s wall, one thread, on a shared machine).\n",
             double(std::clock() - c0) / CLOCKS_PER_SEC,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}
