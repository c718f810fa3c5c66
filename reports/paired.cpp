#include "reports/paired.hpp"
#include "common/json_number.hpp"
#include "common/number_text.hpp"

#include "reports/units.hpp"


#include "reports/sequential.hpp"

#include <cmath>
#include <fmt/format.h>
#include <vector>

namespace layerbench::reports {
namespace {

using nlohmann::json;

json interval(const stats::Interval& i) { return {{"low", finite_or_null(i.low)}, {"high", finite_or_null(i.high)}}; }

json arm(const stats::Summary& s) {
  return {{"mean", s.mean}, {"median", s.median}, {"sd", s.sd}, {"min", s.min}, {"max", s.max}};
}

// Five significant digits: a non-zero value never prints as 0.
std::string ci(const stats::Interval& i) { return fmt::format("[{}, {}]", text::signed_number(i.low), text::signed_number(i.high)); }

// A time in an adaptive unit (9.57e-05 s reads "95.68 µs"); any other unit as a plain number.
double to_ms(const std::string& unit) {
  return unit == "s" ? 1e3 : unit == "ms" ? 1 : unit == "us" || unit == "\u00b5s" ? 1e-3 : unit == "ns" ? 1e-6
         : unit == "min" ? 6e4 : unit == "h" ? 3.6e6 : 0;
}
std::string qg(double v, const std::string& unit) {
  const double k = to_ms(unit);
  return k == 0 || !std::isfinite(v) ? text::number(v) : fmt_quantity(v * k, Unit::ms, 5);
}
std::string qsg(double v, const std::string& unit) {
  const double k = to_ms(unit);
  return k == 0 || !std::isfinite(v) ? text::signed_number(v) : fmt_quantity_signed(v * k, Unit::ms, 5);
}
std::string qci(const stats::Interval& i, const std::string& unit) {
  const double k = to_ms(unit);
  if (k == 0 || !std::isfinite(i.low) || !std::isfinite(i.high)) return ci(i);
  return fmt_interval(i.low * k, i.high * k, Unit::ms, 5);
}
std::string resamples_text(std::size_t b) {
  return b % 1000 == 0 ? fmt::format("{}k", b / 1000) : fmt::format("{}", b);
}

}  // namespace

json prediction_json(const stats::PredictedResult& p) {
  const auto& c = p.check;
  return {{"value", p.value},
          {"half_width", c.half_width},
          {"ratio_mean", finite_or_null(p.ratio_mean)},
          {"ratio_median", finite_or_null(p.ratio_median)},
          {"difference", finite_or_null(c.difference)},
          {"difference_ci", interval(c.difference_ci)},
          {"ratio", finite_or_null(c.ratio)},
          {"ratio_ci", c.ratio_bounded ? interval(c.ratio_ci) : json(nullptr)},
          {"ratio_ci_method", "fieller"},
          {"holds", c.holds},
          {"verdict", c.verdict}};
}

namespace {

// Rows of (label, value) shared by the text and markdown renderers.
using Rows = std::vector<std::pair<std::string, std::string>>;

Rows delta_rows(const stats::PairedAnalysis& a, const stats::PairedOptions& o, const PairedContext& ctx) {
  const int level = static_cast<int>(std::lround(100 * o.confidence));
  const auto& b = a.bootstrap;
  Rows rows{
      {"mean", fmt::format("{} ({})", qsg(a.delta.mean, ctx.unit), text::signed_percent(a.delta.mean_pct))},
      {"ratio of means (candidate / base)", ratio_text(a.candidate.mean, a.base.mean, ctx.unit)},
      {"median", fmt::format("{} ({})", qsg(a.delta.median, ctx.unit), text::signed_percent(a.delta.median_pct))},
      {fmt::format("{:g}% trimmed mean", 100 * a.delta.trim),
       fmt::format("{} ({})", qsg(a.delta.trimmed_mean, ctx.unit), text::signed_percent(a.delta.trimmed_mean_pct))},
      {"sd / se", fmt::format("{} / {}", qg(a.delta.sd, ctx.unit), qg(a.delta.se, ctx.unit))},
      {fmt::format("{}% CI of the mean (t)", level), qci(a.t.ci, ctx.unit)},
  };
  if (a.normal_limit) {  // n > kBootstrapMaxPairs: no resampling (stats/bootstrap.hpp)
    rows.push_back({fmt::format("{}% CI of the median (order statistics, normal limit: n > {})", level,
                                stats::kBootstrapMaxPairs),
                    qci(b.median.percentile, ctx.unit)});
    return rows;
  }
  rows.push_back({fmt::format("{}% CI of the mean (bootstrap percentile, {})", level, resamples_text(b.mean.resamples)),
                  qci(b.mean.percentile, ctx.unit)});
  rows.push_back({fmt::format("{}% CI of the mean (bootstrap BCa)", level), qci(b.mean.bca, ctx.unit)});
  rows.push_back({fmt::format("{}% CI of the median (bootstrap percentile)", level), qci(b.median.percentile, ctx.unit)});
  rows.push_back({fmt::format("{}% CI of the median (bootstrap BCa)", level), qci(b.median.bca, ctx.unit)});
  return rows;
}

Rows test_rows(const stats::PairedAnalysis& a) {
  const auto& w = a.wilcoxon;
  Rows rows{
      {"paired t", fmt::format("t={:.4g}, df={:g}, two-sided p={}", a.t.t, a.t.df, text::number(a.t.p, 4))},
      {"Wilcoxon signed-rank",
       fmt::format("W+={:g}, W-={:g}, n={}, z={:.4g}, p(normal)={}, p(exact)={}", w.w_plus, w.w_minus, w.n_nonzero,
                   w.z, text::number(w.p_normal, 4), w.p_exact ? text::number(*w.p_exact, 4) : text::kNotAvailable)},
      {"sign test", fmt::format("{}/{} pairs positive, two-sided p={}", a.sign.positive, a.sign.n, text::number(a.sign.p, 4))},
  };
  // The first kListedOutliers by position; the rest counted (all of them are in the JSON).
  constexpr std::size_t kListedOutliers = 10;
  std::string outliers = a.outliers.empty() ? "none" : "";
  for (std::size_t i = 0; i < a.outliers.size() && i < kListedOutliers; ++i) {
    const auto& x = a.outliers[i];
    outliers += fmt::format("{}{} (pair {}, {} {})", i ? ", " : "", text::signed_number(x.value), x.index,
                            stats::to_string(x.side), stats::to_string(x.severity));
  }
  if (a.outliers.size() > kListedOutliers)
    outliers += fmt::format(" and {} more ({} in all, listed in the JSON)", a.outliers.size() - kListedOutliers,
                            a.outliers.size());
  rows.emplace_back("Tukey outliers of the delta", outliers);
  rows.emplace_back("drift (Spearman vs pair index)",
                    fmt::format("base rho={} p={}; delta rho={} p={}", fmt_sig_signed(a.drift.base.rho), text::number(a.drift.base.p, 4), fmt_sig_signed(a.drift.delta.rho),
                                text::number(a.drift.delta.p, 4)));
  if (a.predicted) {
    const auto& c = a.predicted->check;
    const std::string pm = c.half_width > 0 ? fmt::format(" +- {}", text::number(c.half_width)) : "";
    rows.emplace_back("predicted delta", text::signed_number(a.predicted->value) + pm);
    rows.emplace_back("measured - predicted", fmt::format("{}, CI {}", text::signed_number(c.difference), ci(c.difference_ci)));
    rows.emplace_back("measured / predicted (Fieller)",
                      c.ratio_bounded ? fmt::format("{:.3f}x, CI [{:.3f}, {:.3f}]", c.ratio, c.ratio_ci.low,
                                                    c.ratio_ci.high)
                                      : fmt::format("{:.3f}x, CI unbounded", c.ratio));
    rows.emplace_back("prediction verdict", c.holds ? "holds (the difference's CI contains 0)"
                                                    : "fails (the difference's CI excludes 0)");
  }
  return rows;
}

std::vector<std::string> notes_of(const stats::PairedAnalysis& a, const PairedContext& ctx) {
  std::vector<std::string> notes = a.guidance;
  for (const auto& b : ctx.blocks) notes.insert(notes.end(), b.notes.begin(), b.notes.end());
  return notes;
}

Rows block_rows(const PairedContext& ctx) {
  Rows rows;
  for (const auto& b : ctx.blocks) rows.insert(rows.end(), b.rows.begin(), b.rows.end());
  return rows;
}

// The tests, the callers' block rows and the verdict: the test table of every renderer.
Rows tests_with_verdict(const stats::PairedAnalysis& a, const PairedContext& ctx) {
  Rows tests = test_rows(a);
  const Rows extra = block_rows(ctx);
  tests.insert(tests.end(), extra.begin(), extra.end());
  tests.emplace_back("verdict", paired_verdict(a).text);
  return tests;
}

std::string unit_suffix(const PairedContext& ctx) { return ctx.unit.empty() ? "" : " (" + ctx.unit + ")"; }

std::vector<std::string> sequential_lines(const stats::SequentialResult* s) {
  if (!s) return {};
  return {stats::sequential_summary(*s), stats::sequential_fixed_n_note()};
}

}  // namespace

json pairs_json(const std::vector<long long>& ids, const std::vector<double>& base,
                const std::vector<double>& candidate) {
  return {{"pair", ids}, {"base", base}, {"candidate", candidate}};
}

std::string ratio_text(double candidate, double base, const std::string& unit) {
  if (!(candidate > 0) || !(base > 0) || !std::isfinite(candidate) || !std::isfinite(base)) return text::kNotAvailable;
  const double r = candidate / base;
  const bool time = is_time_unit(unit);
  if (r == 1) return "1x (equal)";
  const double factor = r > 1 ? r : 1 / r;
  const char* word = time ? (r > 1 ? "slower" : "faster") : (r > 1 ? "higher" : "lower");
  return fmt::format("{:.4g}x: the candidate is {:.4g}x {}", r, factor, word);
}

bool is_time_unit(const std::string& unit) {
  return unit == "s" || unit == "ms" || unit == "us" || unit == "\u00b5s" || unit == "ns" || unit == "min" ||
         unit == "h";
}

PairedVerdict paired_verdict(const stats::PairedAnalysis& a) {
  const double wp = a.wilcoxon.p_exact ? *a.wilcoxon.p_exact : a.wilcoxon.p_normal;
  const auto& ci = a.bootstrap.mean.percentile;
  PairedVerdict v;
  v.resolved = wp < a.alpha && std::isfinite(ci.low) && std::isfinite(ci.high) && (ci.low > 0 || ci.high < 0);
  v.direction = v.resolved ? (a.delta.mean > 0 ? 1 : -1) : 0;
  const int level = static_cast<int>(std::lround(100 * (1 - a.alpha)));
  const char* kind = a.normal_limit ? "normal-limit" : "bootstrap";
  v.text = v.resolved ? fmt::format("resolved: the candidate is {} (the {}% {} interval of the mean delta "
                                    "excludes 0 and Wilcoxon p = {} < alpha = {:.3g})",
                                    v.direction > 0 ? "higher (slower, for times)" : "lower (faster, for times)", level,
                                    kind, text::number(wp, 4), a.alpha)
                      : fmt::format("unresolved: the {}% {} interval of the mean delta {} and Wilcoxon p = {} "
                                    "(alpha = {:.3g})",
                                    level, kind, (ci.low > 0 || ci.high < 0) ? "excludes 0" : "contains 0", text::number(wp, 4), a.alpha);
  return v;
}

json paired_json(const stats::PairedAnalysis& a, const stats::PairedOptions& o, const PairedContext& ctx) {
  const auto& b = a.bootstrap;
  json outliers = json::array();
  for (const auto& x : a.outliers) {
    outliers.push_back({{"index", x.index}, {"value", x.value}, {"kind", stats::to_string(x.side)},
                        {"severity", stats::to_string(x.severity)}});
  }
  const PairedVerdict v = paired_verdict(a);
  json j = {
      {"schema", kPairedSchema},
      {"metric", ctx.metric},
      {"unit", ctx.unit},
      {"confidence", o.confidence},
      {"alpha", a.alpha},
      {"labels", {{"base", ctx.base_label}, {"candidate", ctx.candidate_label}}},
      {"n", a.n},
      {"base", arm(a.base)},
      {"candidate", arm(a.candidate)},
      {"delta",
       {{"mean", a.delta.mean}, {"median", a.delta.median}, {"trimmed_mean", a.delta.trimmed_mean},
        {"trim", a.delta.trim}, {"sd", a.delta.sd}, {"se", a.delta.se}, {"mean_pct", finite_or_null(a.delta.mean_pct)},
        {"median_pct", finite_or_null(a.delta.median_pct)}, {"trimmed_mean_pct", finite_or_null(a.delta.trimmed_mean_pct)}}},
      {"t_test", {{"t", finite_or_null(a.t.t)}, {"df", a.t.df}, {"p", finite_or_null(a.t.p)}}},
      {"t_ci", {{"confidence", o.confidence}, {"low", finite_or_null(a.t.ci.low)}, {"high", finite_or_null(a.t.ci.high)}}},
      {"bootstrap",
       {{"method", a.normal_limit ? "normal_limit" : "bootstrap"}, {"resamples", b.mean.resamples}, {"seed", b.mean.seed}, {"percentile", interval(b.mean.percentile)},
        {"bca", interval(b.mean.bca)}, {"median_percentile", interval(b.median.percentile)},
        {"median_bca", interval(b.median.bca)}}},
      {"wilcoxon",
       {{"w_plus", a.wilcoxon.w_plus}, {"w_minus", a.wilcoxon.w_minus}, {"n_nonzero", a.wilcoxon.n_nonzero},
        {"z", finite_or_null(a.wilcoxon.z)}, {"p_normal", finite_or_null(a.wilcoxon.p_normal)},
        {"p_exact", a.wilcoxon.p_exact ? finite_or_null(*a.wilcoxon.p_exact) : json(nullptr)},
        {"zero_method", stats::to_string(o.zero_method)}, {"continuity", o.continuity}}},
      {"sign_test", {{"positive", a.sign.positive}, {"negative", a.sign.negative}, {"n", a.sign.n}, {"p", a.sign.p}}},
      {"outliers", outliers},
      {"drift",
       {{"base_rho", finite_or_null(a.drift.base.rho)}, {"base_p", finite_or_null(a.drift.base.p)}, {"delta_rho", finite_or_null(a.drift.delta.rho)},
        {"delta_p", finite_or_null(a.drift.delta.p)}}},
      {"predicted", a.predicted ? prediction_json(*a.predicted) : json(nullptr)},
      {"verdict", {{"resolved", v.resolved}, {"direction", v.direction}, {"text", v.text}}},
      {"warnings", a.warnings},
      {"guidance", a.guidance},
  };
  for (const auto& blk : ctx.blocks) j[blk.key] = blk.json;
  if (ctx.sequential) j["sequential"] = sequential_json(*ctx.sequential);
  return j;
}

std::vector<Section> paired_sections(const stats::PairedAnalysis& a, const stats::PairedOptions& o,
                                     const PairedContext& ctx) {
  Section main;
  main.intro = "Delta = candidate − base: positive = candidate higher (slower, for times).";
  Table arms;
  arms.title = "Arms";
  arms.headers = {"Arm", "n", "median", "mean", "sd", "min", "max"};
  arms.align = {Align::left};
  for (const auto& [name, s] : {std::pair{ctx.base_label, a.base}, std::pair{ctx.candidate_label, a.candidate}})
    arms.add_row({name, std::to_string(s.n), qg(s.median, ctx.unit), qg(s.mean, ctx.unit), qg(s.sd, ctx.unit),
                  qg(s.min, ctx.unit), qg(s.max, ctx.unit)});
  main.tables.push_back(std::move(arms));
  auto rows_table = [](std::string title, const std::string& head, const Rows& rows) {
    Table t;
    t.title = std::move(title);
    t.headers = {head, "Value"};
    t.align = {Align::left, Align::left};
    for (const auto& [k, v] : rows) t.add_row({k, v});
    return t;
  };
  main.tables.push_back(rows_table(fmt::format("Paired delta{} (candidate minus base), n={}", unit_suffix(ctx), a.n),
                                   "Statistic", delta_rows(a, o, ctx)));
  main.tables.push_back(rows_table("Tests", "Test", tests_with_verdict(a, ctx)));
  for (const auto& blk : ctx.blocks) main.notes.insert(main.notes.end(), blk.lines.begin(), blk.lines.end());
  std::vector<Section> out{std::move(main)};
  if (ctx.sequential) {
    Section seq;
    seq.title = "Sequential";
    seq.notes = sequential_lines(ctx.sequential);
    out.push_back(std::move(seq));
  }
  Section guidance;
  guidance.title = "Reading guidance";
  guidance.notes = notes_of(a, ctx);
  for (const auto& w : a.warnings) guidance.notes.push_back("Warning: " + w);
  if (!guidance.notes.empty()) out.push_back(std::move(guidance));
  return out;
}

PairedTables paired_tables(const stats::PairedAnalysis& a, const stats::PairedOptions& o, const PairedContext& ctx) {
  PairedTables out;
  for (auto& s : paired_sections(a, o, ctx)) {
    for (auto& t : s.tables) out.tables.push_back(std::move(t));
    for (auto& n : s.notes) out.notes.push_back(std::move(n));
  }
  return out;
}

}  // namespace layerbench::reports
