// The paired-study section: arm table, paired delta statistics, tests, drift and the two figures that
// show whether pairing worked (per-pair series of both arms, delta distribution with its intervals).
#include "reports/sections.hpp"

#include "reports/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace layerbench::reports {
namespace {

std::string with_unit(double v, const std::string& unit, int decimals = 3) {
  return unit.empty() ? fmt_fixed(v, decimals) : fmt_fixed(v, decimals) + " " + unit;
}

std::string signed_with_pct(double v, double fraction, const std::string& unit) {
  return fmt_signed(v, 3, unit.empty() ? "" : " " + unit) + " (" + fmt_signed(100.0 * fraction, 3, "%") + ")";
}

std::string interval(const stats::Interval& ci, const std::string& unit) {
  return fmt::format("[{}, {}]{}", fmt_signed(ci.low, 3), fmt_signed(ci.high, 3), unit.empty() ? "" : " " + unit);
}

}  // namespace

Section paired_study(const PairedStudy& study, const stats::PairedOptions& given) {
  stats::PairedOptions options = given;
  if (study.predicted && !options.predicted) {
    options.predicted = study.predicted;
    options.predicted_half_width = study.predicted_half_width;
  }
  const stats::PairedAnalysis a = stats::analyze_paired(study.base, study.candidate, options);
  const std::string& u = study.unit;
  const std::string metric = study.metric.empty() ? "value" : study.metric;
  const int cl = static_cast<int>(std::lround(100 * options.confidence));
  const auto pct = [&](double v) { return a.base.mean != 0 ? v / a.base.mean : stats::nan_value; };
  Section s;
  s.title = "Paired study — " + metric;
  s.intro = fmt::format(
      "Source: `{}`. {} interleaved pairs; delta = base − candidate, so a positive delta means the candidate is "
      "smaller (faster, for times). Percentages are of the base mean.",
      study.path, a.n);
  if (study.header.contains("base") && study.header["base"].is_string() && study.header.contains("candidate") &&
      study.header["candidate"].is_string())
    s.intro += fmt::format(" Base: {}; candidate: {}.", study.header["base"].get<std::string>(),
                           study.header["candidate"].get<std::string>());

  Table arms;
  arms.title = "Arms";
  arms.headers = {"Arm", "n", "median", "mean", "sd", "min", "max"};
  arms.align = {Align::left};
  for (const auto& [name, sum] : {std::pair{"base", a.base}, std::pair{"candidate", a.candidate}})
    arms.add_row({name, std::to_string(sum.n), with_unit(sum.median, u), with_unit(sum.mean, u), with_unit(sum.sd, u),
                  with_unit(sum.min, u), with_unit(sum.max, u)});
  s.tables.push_back(std::move(arms));

  Table d;
  d.title = fmt::format("Paired delta (base − candidate), n={}", a.n);
  d.headers = {"Statistic", "Value"};
  d.align = {Align::left, Align::right};
  d.add_row({"mean", signed_with_pct(a.delta.mean, pct(a.delta.mean), u)});
  d.add_row({"median", signed_with_pct(a.delta.median, pct(a.delta.median), u)});
  d.add_row({fmt::format("{:.0f}% trimmed mean", 100 * a.delta.trim), signed_with_pct(a.delta.trimmed_mean, pct(a.delta.trimmed_mean), u)});
  d.add_row({"sd / se", with_unit(a.delta.sd, u) + " / " + with_unit(a.delta.se, u)});
  d.add_row({fmt::format("{}% CI of the mean (t)", cl), interval(a.t.ci, u)});
  d.add_row({fmt::format("{}% CI of the mean (bootstrap BCa, {})", cl, a.bootstrap.mean.resamples), interval(a.bootstrap.mean.bca, u)});
  d.add_row({fmt::format("{}% CI of the mean (bootstrap percentile)", cl), interval(a.bootstrap.mean.percentile, u)});
  d.add_row({fmt::format("{}% CI of the median (bootstrap percentile)", cl), interval(a.bootstrap.median.percentile, u)});
  d.add_row({"paired t", fmt::format("t={}, df={}, two-sided p={}", fmt_fixed(a.t.t, 3), fmt_fixed(a.t.df, 0), fmt_p(a.t.p))});
  const double wp = a.wilcoxon.p_exact ? *a.wilcoxon.p_exact : a.wilcoxon.p_normal;
  d.add_row({"Wilcoxon signed-rank", fmt::format("z={}, two-sided p={} ({})", fmt_fixed(a.wilcoxon.z, 2), fmt_p(wp),
                                                 a.wilcoxon.p_exact ? "exact" : "normal")});
  d.add_row({"sign test", fmt::format("{}/{} pairs faster, two-sided p={}", a.sign.positive, a.sign.n, fmt_p(a.sign.p))});
  d.add_row({"drift (Spearman ρ vs pair index)",
             fmt::format("base ρ={} (p={}), delta ρ={} (p={})", fmt_fixed(a.drift.base.rho, 2), fmt_p(a.drift.base.p),
                         fmt_fixed(a.drift.delta.rho, 2), fmt_p(a.drift.delta.p))});
  std::string outliers;
  for (const auto& o : a.outliers)
    outliers += fmt::format("{}{} ({} {})", outliers.empty() ? "" : ", ", fmt_signed(o.value, 3, u.empty() ? "" : " " + u),
                            stats::to_string(o.side), stats::to_string(o.severity));
  d.add_row({"Tukey outliers (labelled, kept)", outliers.empty() ? "none" : outliers});
  if (a.predicted) {
    const auto& c = a.predicted->check;
    const std::string src = study.predicted_source.empty() ? "" : " (" + study.predicted_source + ")";
    d.add_row({"predicted" + src, fmt_signed(c.predicted, 3, u.empty() ? "" : " " + u) +
                                      (c.half_width > 0 ? " ± " + with_unit(c.half_width, u) : "")});
    d.add_row({fmt::format("measured − predicted, {}% CI", cl),
               fmt_signed(c.difference, 3, u.empty() ? "" : " " + u) + " " + interval(c.difference_ci, u)});
    d.add_row({"measured / predicted (Fieller)",
               c.ratio_bounded ? fmt::format("{} [{}, {}]", fmt_fixed(c.ratio, 3), fmt_fixed(c.ratio_ci.low, 3),
                                             fmt_fixed(c.ratio_ci.high, 3))
                               : fmt_fixed(c.ratio, 3) + ", interval unbounded"});
    d.add_row({"prediction", c.holds ? "holds (the difference's CI contains 0)" : "fails (the difference's CI excludes 0)"});
  }
  s.tables.push_back(std::move(d));
  for (const auto& w : a.warnings) s.notes.push_back("warning: " + w);
  for (const auto& g : a.guidance) s.notes.push_back(g);

  // Per-pair series: drift shows up as a trend shared by both arms, which pairing cancels.
  svg::XYPlot series;
  series.title = "Per-pair series of both arms";
  series.x = {"pair index", "run order"};
  series.y = {metric, u.empty() ? "value" : u};
  svg::Series sb{"base", {}, study.base, svg::Mark::line_points, 0, ""};
  svg::Series sc{"candidate", {}, study.candidate, svg::Mark::line_points, 0, ""};
  for (std::size_t i = 0; i < a.n; ++i) {
    sb.x.push_back(static_cast<double>(i));
    sc.x.push_back(static_cast<double>(i));
  }
  series.series = {sb, sc};
  s.figures.push_back(svg::render(series));

  // Delta distribution: a histogram with the intervals of the mean shaded and zero marked.
  svg::XYPlot hist;
  hist.title = "Distribution of paired deltas";
  hist.x = {"delta base − candidate", u.empty() ? "value" : u};
  hist.y = {"pairs", "count"};
  hist.y.include_zero = true;
  const auto [lo_it, hi_it] = std::minmax_element(a.deltas.begin(), a.deltas.end());
  const double lo = *lo_it, hi = *hi_it;
  const auto bins = static_cast<std::size_t>(std::clamp(std::ceil(std::sqrt(static_cast<double>(a.n))), 3.0, 30.0));
  const double width = hi > lo ? (hi - lo) / static_cast<double>(bins) : std::max(std::fabs(lo) * 0.1, 1e-9);
  svg::Series h{"pairs per bin", {}, {}, svg::Mark::bars, width, "#9a9a9a"};
  for (std::size_t b = 0; b < bins; ++b) {
    h.x.push_back(lo + width * (static_cast<double>(b) + 0.5));
    h.y.push_back(0);
  }
  for (double v : a.deltas) {
    const auto b = std::min(bins - 1, static_cast<std::size_t>(width > 0 ? (v - lo) / width : 0));
    h.y[b] += 1;
  }
  hist.series = {h};
  if (std::isfinite(a.t.ci.low)) hist.x_spans.push_back({a.t.ci.low, a.t.ci.high, fmt::format("{}% CI of mean (t)", cl)});
  if (std::isfinite(a.bootstrap.mean.bca.low))
    hist.x_spans.push_back({a.bootstrap.mean.bca.low, a.bootstrap.mean.bca.high, fmt::format("{}% CI of mean (bootstrap BCa)", cl)});
  hist.ref_lines.push_back({0.0, "zero (no change)", true});
  hist.ref_lines.push_back({a.delta.mean, "mean delta", true});
  s.figures.push_back(svg::render(hist));
  return s;
}

}  // namespace layerbench::reports
