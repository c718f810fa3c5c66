#include "study/gate.hpp"
#include "study/gate_output.hpp"
#include "stats/bootstrap.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <span>
#include <vector>

namespace lg = layerbench::gate;

namespace {

// Deterministic "noise": a fixed zig-zag of +-0.3%, so every test sees the same data.
std::vector<double> series(std::size_t n, double level) {
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = level * (1 + 0.003 * std::sin(1.7 * static_cast<double>(i)));
  return x;
}

std::vector<double> scaled(const std::vector<double>& x, double factor, double wobble = 0.001) {
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * factor * (1 + wobble * std::cos(2.3 * static_cast<double>(i)));
  return y;
}

lg::GateOptions opts(double threshold = 0.02) {
  lg::GateOptions o;
  o.threshold = threshold;
  o.resamples = 4000;
  return o;
}

}  // namespace

TEST(Gate, SampleSizeFloors) {
  EXPECT_EQ(lg::min_pairs(0.05), 5u);   // 2^-5 = 0.03125 < 0.05 <= 2^-4
  EXPECT_EQ(lg::min_pairs(0.01), 7u);   // 2^-7 = 0.0078
  EXPECT_EQ(lg::min_per_arm(0.05), 4u); // statistics.md oracle 22: 2/70 = 0.028571 < 0.05 <= 2/20
  EXPECT_EQ(lg::min_per_arm(0.01), 5u); // 2/252 = 0.0079365
}

TEST(Gate, ParseThreshold) {
  EXPECT_DOUBLE_EQ(lg::parse_threshold("2%"), 0.02);
  EXPECT_DOUBLE_EQ(lg::parse_threshold("0.5 %"), 0.005);
  EXPECT_DOUBLE_EQ(lg::parse_threshold("0.02"), 0.02);
  EXPECT_DOUBLE_EQ(lg::parse_threshold("0"), 0.0);
  EXPECT_THROW(lg::parse_threshold("2"), std::invalid_argument);  // ambiguous: 2% or 200%?
  EXPECT_THROW(lg::parse_threshold("abc"), std::invalid_argument);
  EXPECT_THROW(lg::parse_threshold("2%%"), std::invalid_argument);
  EXPECT_THROW(lg::parse_threshold("-1%"), std::invalid_argument);
  EXPECT_THROW(lg::parse_threshold(""), std::invalid_argument);
}

TEST(Gate, PairedRegressionExactP) {
  const auto base = series(8, 100);
  const auto cand = scaled(base, 1.05);  // every pair 5% slower
  const auto f = lg::gate_paired("t", base, cand, opts());
  EXPECT_EQ(f.verdict, lg::Verdict::regressed);
  EXPECT_DOUBLE_EQ(f.p_worse, 1.0 / 256);  // all 8 deltas positive: exact one-sided p = 2^-8
  EXPECT_DOUBLE_EQ(f.p_better, 1.0);
  EXPECT_NEAR(f.change, 0.05, 0.002);
  EXPECT_GT(f.ci.low, 0.02);
  EXPECT_LE(f.ci.low, f.change);
  EXPECT_GE(f.ci.high, f.change);
  EXPECT_DOUBLE_EQ(f.ci_level, 0.9);  // [Q(alpha), Q(1 - alpha)]: two one-sided 95% bounds
}

TEST(Gate, PairedSignificantButNotRelevant) {
  const auto base = series(12, 100);
  const auto cand = scaled(base, 1.01);  // a real, consistent 1% slowdown
  EXPECT_EQ(lg::gate_paired("t", base, cand, opts(0.02)).verdict, lg::Verdict::no_change);
  EXPECT_EQ(lg::gate_paired("t", base, cand, opts(0.005)).verdict, lg::Verdict::regressed);
}

TEST(Gate, PairedImprovementAndHigherIsBetter) {
  const auto base = series(10, 100);
  const auto faster = scaled(base, 0.9);
  EXPECT_EQ(lg::gate_paired("t", base, faster, opts()).verdict, lg::Verdict::improved);
  auto o = opts();
  o.higher_is_better = true;  // e.g. bandwidth: 10% lower is a regression
  const auto f = lg::gate_paired("t", base, faster, o);
  EXPECT_EQ(f.verdict, lg::Verdict::regressed);
  EXPECT_LT(f.ci.high, -0.02);
  EXPECT_EQ(lg::gate_paired("t", base, scaled(base, 1.1), o).verdict, lg::Verdict::improved);
}

TEST(Gate, PairedNoChangeAndIdentical) {
  const auto base = series(20, 100);
  std::vector<double> cand(base.size());
  for (std::size_t i = 0; i < base.size(); ++i) cand[i] = base[i] * (i % 2 ? 1.004 : 0.996);
  EXPECT_EQ(lg::gate_paired("t", base, cand, opts(0)).verdict, lg::Verdict::no_change);
  const auto same = lg::gate_paired("t", base, base, opts(0));  // all deltas zero
  EXPECT_EQ(same.verdict, lg::Verdict::no_change);
  EXPECT_DOUBLE_EQ(same.change, 0.0);
}

TEST(Gate, PairedTooFewPairsIsInconclusive) {
  const auto base = series(4, 100);
  const auto f = lg::gate_paired("t", base, scaled(base, 2.0), opts());
  EXPECT_EQ(f.verdict, lg::Verdict::inconclusive);
  EXPECT_EQ(f.need, 5u);
  EXPECT_NE(f.note.find("need ≥ 5 pairs"), std::string::npos) << f.note;
  EXPECT_THROW(lg::gate_paired("t", base, series(5, 100), opts()), std::invalid_argument);
}

TEST(Gate, UnpairedMannWhitney) {
  const auto base = series(10, 100);
  const auto slow = scaled(series(10, 100), 1.10);
  const auto f = lg::gate_unpaired("t", base, slow, opts());
  EXPECT_EQ(f.verdict, lg::Verdict::regressed);
  EXPECT_NEAR(f.p_worse, 2.0 / 184756, 1e-15);  // complete separation: 2 / C(20, 10), exact
  EXPECT_NEAR(f.change, 0.10, 0.005);
  EXPECT_GT(f.ci.low, 0.02);
  EXPECT_DOUBLE_EQ(f.ci_level, 0.95);
  EXPECT_EQ(lg::gate_unpaired("t", base, scaled(series(10, 100), 0.9), opts()).verdict, lg::Verdict::improved);
  EXPECT_EQ(lg::gate_unpaired("t", base, base, opts()).verdict, lg::Verdict::no_change);
  const auto small = lg::gate_unpaired("t", series(3, 100), series(3, 200), opts());
  EXPECT_EQ(small.verdict, lg::Verdict::inconclusive);
  EXPECT_NE(small.note.find("need ≥ 4 samples per arm"), std::string::npos) << small.note;
}

TEST(Gate, ReportExitCodeAndMarkdown) {
  lg::GateReport r;
  r.base_source = "a.json";
  r.candidate_source = "b.json";
  r.metric = "real_time";
  r.unit = "ns";
  r.options = opts();
  r.findings.push_back(lg::gate_unpaired("BM_fast", series(10, 100), series(10, 100), r.options));
  EXPECT_EQ(lg::exit_code(r), lg::kExitPass);
  r.findings.push_back(lg::gate_unpaired("BM_slow", series(10, 100), scaled(series(10, 100), 1.2), r.options));
  EXPECT_EQ(lg::exit_code(r), lg::kExitRegression);
  const auto md = layerbench::reports::to_markdown(std::vector{lg::gate_section(r)}, lg::kMarkdownHeading);
  EXPECT_NE(md.find("### Performance gate: FAIL: 1 regressed beyond the threshold; 0 improved beyond the threshold; 0 significant, size not resolved; 1 no change larger than 2%; 0 inconclusive"),
            std::string::npos) << md;
  EXPECT_NE(md.find("| benchmark | verdict | change | CI (95%) | p | n base/cand | base median (ns) | candidate median (ns) |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("| BM_slow | regressed beyond the threshold | +20."), std::string::npos) << md;
  const auto j = lg::to_json(r);
  EXPECT_EQ(j["result"], "fail");
  EXPECT_EQ(j["findings"][1]["verdict"], "regressed");
}

// Above stats::kBootstrapMaxPairs the paired rule's interval is the delta-method normal limit; it
// must agree with the bootstrap where both can run.
TEST(Gate, PairedLargeNNormalLimitMatchesBootstrap) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 0.02);
  auto make = [&](std::size_t n, std::vector<double>& b, std::vector<double>& c) {
    b.resize(n);
    c.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      b[i] = 1.0 + noise(rng);
      c[i] = 1.003 * b[i] + noise(rng);
    }
  };
  std::vector<double> b, c;
  make(layerbench::stats::kBootstrapMaxPairs + 5000, b, c);
  const auto big = lg::gate_paired("t", b, c, opts(0.02));
  EXPECT_NE(big.note.find("normal-limit"), std::string::npos);
  EXPECT_LT(big.ci.low, big.change);
  EXPECT_GT(big.ci.high, big.change);
  // The same data cut to the threshold: bootstrap. The two intervals' widths scale as 1/sqrt(n).
  std::vector<double> b2(b.begin(), b.begin() + layerbench::stats::kBootstrapMaxPairs),
      c2(c.begin(), c.begin() + layerbench::stats::kBootstrapMaxPairs);
  const auto boot = lg::gate_paired("t", b2, c2, opts(0.02));
  EXPECT_EQ(boot.note.find("normal-limit"), std::string::npos);
  const double scale = std::sqrt(static_cast<double>(b2.size()) / static_cast<double>(b.size()));
  EXPECT_NEAR((big.ci.high - big.ci.low) / (boot.ci.high - boot.ci.low), scale, 0.1 * scale);
}

TEST(Gate, SequentialRuleStopsEarlyOnARegressionAndOnEquivalence) {
  // Deterministic noise of about 1%: the candidate 5% slower, or the same.
  std::vector<double> base, slower, same;
  for (int i = 0; i < 200; ++i) {
    const double wobble = 0.01 * std::sin(1.3 * i) + 0.007 * std::cos(2.9 * i);
    base.push_back(100 * (1 + wobble));
    slower.push_back(105 * (1 - wobble * 0.8 + 0.004 * std::sin(0.7 * i)));
    same.push_back(100 * (1 - wobble * 0.8 + 0.004 * std::sin(0.7 * i)));
  }
  lg::GateOptions o;
  o.threshold = 0.02;
  layerbench::stats::SequentialDesign d;
  d.alpha = o.alpha;
  d.equivalence = o.threshold;
  d.effect_margin = o.threshold;  // as layerbench-gate --sequential sets it
  d.max_pairs = 150;
  const auto reg = lg::gate_sequential("t", base, slower, o, d);
  EXPECT_EQ(reg.verdict, lg::Verdict::regressed) << reg.note;
  EXPECT_LT(reg.n_base, 30u);  // early
  EXPECT_GT(reg.ci.low, o.threshold);  // the whole interval of the change beyond +2%
  EXPECT_NEAR(reg.change, 0.05, 0.01);
  EXPECT_EQ(lg::verdict_for(reg, o), lg::Verdict::regressed);
  auto loose = o;
  loose.threshold = 0.5;  // the same stop judged against a 50% threshold: a change, not a relevant one
  EXPECT_EQ(lg::verdict_for(reg, loose), lg::Verdict::no_change);

  const auto eq = lg::gate_sequential("t", base, same, o, d);
  EXPECT_EQ(eq.verdict, lg::Verdict::no_change) << eq.note;
  EXPECT_EQ(eq.sequential->stop, layerbench::stats::SequentialStop::equivalence);
  EXPECT_FALSE(eq.undecided);

  // Three pairs decide nothing yet: undecided, exit 3 (add pairs); at a cap of 3 it is inconclusive.
  const std::span<const double> b(base), s(slower);
  const auto early = lg::gate_sequential("t", b.first(3), s.first(3), o, d);
  EXPECT_TRUE(early.undecided);
  lg::GateReport report;
  report.paired = true;
  report.options = o;
  report.findings = {early};
  EXPECT_EQ(lg::exit_code(report), lg::kExitUndecided);
  EXPECT_EQ(lg::to_json(report)["result"], "undecided");
  EXPECT_TRUE(lg::to_json(report)["findings"][0]["sequential"].is_object());
  d.max_pairs = 3;
  const auto capped = lg::gate_sequential("t", b.first(3), s.first(3), o, d);
  EXPECT_EQ(capped.verdict, lg::Verdict::inconclusive);
  EXPECT_FALSE(capped.undecided);
  report.findings = {reg};
  EXPECT_EQ(lg::exit_code(report), lg::kExitRegression);
  EXPECT_NE(layerbench::reports::to_text(lg::gate_section(report)).find("Sequential stop after"), std::string::npos);
}

TEST(Gate, LabelsSaySignificanceAndSizeApart) {
  lg::GateOptions o;  // 2% threshold, alpha 0.05
  lg::Finding f;
  f.verdict = lg::Verdict::no_change;
  f.p_worse = 0.019;  // significant ...
  f.p_better = 0.99;
  f.ci = {0.01, 0.80};  // ... but the interval reaches inside the threshold
  EXPECT_EQ(lg::verdict_label(f, o), "significant, size not resolved");
  f.p_worse = 0.4;
  EXPECT_EQ(lg::verdict_label(f, o), "inconclusive");  // not significant, the interval beyond +-2%
  f.ci = {-0.01, 0.015};
  EXPECT_EQ(lg::verdict_label(f, o), "no change larger than 2%");
  f.verdict = lg::Verdict::regressed;
  EXPECT_EQ(lg::verdict_label(f, o), "regressed beyond the threshold");
}
