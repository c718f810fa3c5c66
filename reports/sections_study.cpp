// The paired-study section: arm table, paired delta statistics, tests, drift and the two figures that
// show whether pairing worked (per-pair series of both arms, delta distribution with its intervals).
#include "reports/sections.hpp"

#include "reports/paired.hpp"
#include "reports/svg.hpp"
#include "stats/sequential.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <cmath>

namespace layerbench::reports {
namespace {

// One row per pair: index, base, candidate, delta (numbers; the unit in the header).
std::string pairs_csv(const PairedStudy& study, const stats::PairedAnalysis& a) {
  const std::string u = study.unit.empty() ? "" : "_" + study.unit;
  std::string out = fmt::format("pair,base{0},candidate{0},delta{0}\n", u);
  for (std::size_t i = 0; i < a.n && i < study.base.size(); ++i)
    out += fmt::format("{},{},{},{}\n", i < study.pair_ids.size() ? study.pair_ids[i] : static_cast<long long>(i),
                       study.base[i], study.candidate[i], study.candidate[i] - study.base[i]);
  return out;
}

// A layerbench-ab sequential study's stop rule, replayed on its pairs (its header records the
// design: the same fields study/study.cpp writes).
std::optional<stats::SequentialResult> sequential_of(const PairedStudy& study) {
  const auto& h = study.header;
  if (!h.contains("sequential") || !h["sequential"].is_object()) return std::nullopt;
  const auto& j = h["sequential"];
  stats::SequentialDesign d;
  try {
    d.alpha = j.at("alpha").get<double>();
    d.tau = j.value("tau", 0.0);
    d.tune_pairs = j.value("tune_pairs", d.tune_pairs);
    d.min_pairs = j.value("min_pairs", d.min_pairs);
    d.equivalence = j.value("equivalence", 0.0);
    d.equivalence_relative = j.value("equivalence_relative", true);
    d.max_pairs = h.value("pairs", std::size_t{0});
    return stats::sequential_decision(study.base, study.candidate, d);
  } catch (const std::exception&) {
    return std::nullopt;  // a design this version cannot read: the fixed-n analysis stands alone
  }
}

// The two figures that show whether pairing worked: per-pair series of both arms, and the delta
// distribution with the intervals of its mean.
void figures(Section& s, const PairedStudy& study, const stats::PairedAnalysis& a, double confidence) {
  const std::string& u = study.unit;
  const std::string metric = study.metric.empty() ? "value" : study.metric;
  const int cl = static_cast<int>(std::lround(100 * confidence));
  // Per-pair series: drift shows up as a trend shared by both arms, which pairing cancels.
  svg::XYPlot series;
  series.title = "Per-pair series of both arms";
  series.x = {"pair index", "run order"};
  series.y = {metric, u.empty() ? "value" : u};
  svg::Series sb{study.base_label, {}, study.base, svg::Mark::line_points, 0, ""};
  svg::Series sc{study.candidate_label, {}, study.candidate, svg::Mark::line_points, 0, ""};
  for (std::size_t i = 0; i < a.n; ++i) {
    sb.x.push_back(static_cast<double>(i));
    sc.x.push_back(static_cast<double>(i));
  }
  series.series = {sb, sc};
  s.figures.push_back(svg::render(series));

  // Delta distribution: a histogram with the intervals of the mean shaded and zero marked.
  svg::XYPlot hist;
  hist.title = "Distribution of paired deltas";
  hist.x = {"delta candidate − base", u.empty() ? "value" : u};
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
}

}  // namespace
Section paired_study(const PairedStudy& whole, const stats::PairedOptions& given) {
  // A sequential study is analysed on the pairs up to its stop, and the stop is stated.
  const auto seq = sequential_of(whole);
  PairedStudy cut;
  if (seq && seq->stop != stats::SequentialStop::running && seq->pairs >= 2 && seq->pairs < whole.base.size()) {
    cut = whole;
    cut.base.resize(seq->pairs);
    cut.candidate.resize(seq->pairs);
    if (cut.pair_ids.size() > seq->pairs) cut.pair_ids.resize(seq->pairs);
  }
  const PairedStudy& study = cut.base.empty() ? whole : cut;
  stats::PairedOptions options = given;
  if (study.predicted && !options.predicted) {
    options.predicted = study.predicted;
    options.predicted_half_width = study.predicted_half_width;
  }
  const stats::PairedAnalysis a = stats::analyze_paired(study.base, study.candidate, options);
  const std::string& u = study.unit;
  const std::string metric = study.metric.empty() ? "value" : study.metric;
  Section s;
  const bool named = study.base_label != "base" || study.candidate_label != "candidate";
  s.title = "Paired study — " + metric + (named ? " — " + study.candidate_label + " against " + study.base_label : "");
  s.intro = fmt::format(
      "Source: `{}`. {} interleaved pairs; delta = candidate − base, so a positive delta means the candidate is "
      "larger (slower, for times). Percentages are of the base mean.",
      study.path, a.n);
  if (study.header.contains("base") && study.header["base"].is_string() && study.header.contains("candidate") &&
      study.header["candidate"].is_string()) {
    std::string command = study.header["candidate"].get<std::string>();
    const auto& more = study.header.contains("more_candidates") ? study.header["more_candidates"] : nlohmann::json();
    if (study.candidate_arm != "candidate" && more.is_array()) {
      const auto k = static_cast<std::size_t>(std::stoi(study.candidate_arm.substr(9)));
      if (k >= 2 && k - 2 < more.size() && more[k - 2].is_string()) command = more[k - 2].get<std::string>();
    }
    s.intro += named ? fmt::format(" Base ({}): {}; candidate ({}): {}.", study.base_label,
                                   study.header["base"].get<std::string>(), study.candidate_label, command)
                     : fmt::format(" Base: {}; candidate: {}.", study.header["base"].get<std::string>(), command);
  }

  PairedContext ctx;
  ctx.metric = metric;
  ctx.unit = u;
  ctx.base_label = study.base_label;
  ctx.candidate_label = study.candidate_label;
  if (seq) ctx.sequential = &*seq;
  if (a.predicted && !study.predicted_source.empty()) {
    PairedBlock pb;
    pb.key = "prediction_source";
    pb.rows.emplace_back("prediction from", study.predicted_source);
    ctx.blocks.push_back(std::move(pb));
  }
  auto pt = paired_tables(a, options, ctx);
  for (auto& t : pt.tables) s.tables.push_back(std::move(t));
  s.notes = std::move(pt.notes);
  s.source = file_stem(study.path);
  s.csvs.push_back({"pairs", pairs_csv(study, a)});

  figures(s, study, a, options.confidence);
  return s;
}

}  // namespace layerbench::reports
