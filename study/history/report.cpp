#include "study/history/report.hpp"

#include "reports/svg.hpp"
#include "reports/table.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace layerbench::history {
namespace {

std::string pct(double v) {
  if (!std::isfinite(v)) return v > 0 ? "+inf" : "—";
  return fmt::format("{:+.2f}%", 100 * v);
}

std::string short_sha(const std::string& s) { return s.substr(0, 12); }

const char* exit_meaning(int rc) {
  switch (rc) {
    case 1: return "exit 1: a confirmed regression";
    case 3: return "exit 3: a suspected change awaits confirmation (`layerbench-history confirm`)";
    default: return "exit 0: nothing confirmed, nothing awaiting confirmation";
  }
}

reports::Section summary_section(const Analysis& a) {
  reports::Section s;
  s.title = "Change points";
  s.source = "history";
  s.intro = fmt::format(
      "{} commits, {} series. A change is suspected when the shift between the commits before and after a split "
      "reaches |z| >= {:g} and {:.1f}% (at least {} commits after it), and alerts only once an interleaved A/B of "
      "the commits either side confirms it. Relative change: + = the metric rose (slower, for times).",
      a.commits.size(), a.series.size(), a.options.threshold, 100 * a.options.min_magnitude, a.options.min_post);
  reports::Table t;
  t.title = "changes";
  t.headers = {"status", "benchmark", "metric", "machine", "change", fmt::format("{:g}% interval", 100 * a.options.confidence),
               "first commit after", "commit range", "p", "A/B", "moved together"};
  t.align = {reports::Align::left, reports::Align::left, reports::Align::left, reports::Align::left};
  for (const auto& f : a.findings) {
    const auto& k = a.series[f.series].series.key;
    const std::string ab = f.confirmation ? fmt::format("{} ({} pairs, {} [{}, {}])", f.confirmation->verdict,
                                                        f.confirmation->pairs, pct(f.confirmation->relative),
                                                        pct(f.confirmation->low), pct(f.confirmation->high))
                                          : "—";
    t.add_row({f.status, k.benchmark, k.unit.empty() ? k.metric : k.metric + " (" + k.unit + ")", k.machine,
               pct(f.step.relative), fmt::format("[{}, {}]", pct(f.step.interval.low), pct(f.step.interval.high)),
               short_sha(f.first_after_sha),
               fmt::format("{}..{} ({})", short_sha(f.range_shas.front()), short_sha(f.range_shas.back()),
                           f.range_shas.size()),
               reports::fmt_p(f.step.p), ab, std::to_string(f.moved_together.size())});
  }
  if (a.findings.empty()) t.add_row({"none", "", "", "", "", "", "", "", "", "", ""});
  s.tables.push_back(std::move(t));
  s.notes.push_back(exit_meaning(exit_code(a)));
  for (const auto& m : a.marks)
    s.notes.push_back(fmt::format("mark {}: {} at {}{}{}", m.id, m.kind == "expected" ? "expected change" : "excluded runs",
                                  short_sha(m.sha), m.benchmark.empty() ? "" : " for " + m.benchmark,
                                  m.note.empty() ? "" : " (" + m.note + ")"));
  return s;
}

std::string trend_plot(const Analysis& a, std::size_t si, std::size_t max_samples) {
  const auto& sp = a.series[si];
  reports::svg::XYPlot p;
  p.title = sp.series.key.display();
  p.x = {"commit (history order)", "", reports::svg::Scale::linear};
  p.y = {sp.series.key.metric, sp.series.key.unit, reports::svg::Scale::linear};
  reports::svg::Series samples{"samples", {}, {}, reports::svg::Mark::points, 0, "#56B4E9"};
  reports::svg::Series median{"median", {}, {}, reports::svg::Mark::line, 0, "#0072B2"};
  for (std::size_t i = 0; i < sp.points.size(); ++i) {
    const auto& v = sp.series.samples[sp.commit_pos[i]];
    const std::size_t stride = std::max<std::size_t>(1, (v.size() + max_samples - 1) / max_samples);
    for (std::size_t k = 0; k < v.size(); k += stride) {
      samples.x.push_back(double(sp.commit_pos[i]));
      samples.y.push_back(v[k]);
    }
    median.x.push_back(double(sp.commit_pos[i]));
    median.y.push_back(std::exp(sp.points[i].y));
  }
  p.series.push_back(std::move(samples));
  p.series.push_back(std::move(median));
  for (const auto& f : a.findings) {
    if (f.series != si) continue;
    p.x_spans.push_back({double(f.range_low_pos) - 0.5, double(f.range_high_pos) + 0.5,
                         fmt::format("{} change at {} ({})", f.status, short_sha(f.first_after_sha), pct(f.step.relative))});
    // The after-step level's interval: the level before times 1 + the step's bounds.
    std::vector<double> before;
    for (std::size_t i = f.step.index - f.step.pre; i < f.step.index; ++i) before.push_back(sp.points[i].y);
    const double level = std::exp(stats::quantile(before, 0.5));
    const double x0 = double(sp.commit_pos[f.step.index]), x1 = double(sp.commit_pos[f.step.index + f.step.post - 1]);
    for (double b : {f.step.interval.low, f.step.interval.high}) {
      if (!std::isfinite(b)) continue;
      reports::svg::Series band{fmt::format("after {}: {:g}% interval", short_sha(f.first_after_sha), 100 * a.options.confidence),
                                {x0, x1}, {level * (1 + b), level * (1 + b)}, reports::svg::Mark::line, 0, "#D55E00"};
      p.series.push_back(std::move(band));
    }
  }
  return reports::svg::render(p);
}

}  // namespace

reports::Report history_report(const Analysis& a, std::size_t max_samples) {
  reports::Report r;
  r.title = "layerbench history";
  r.sections.push_back(summary_section(a));
  for (std::size_t si = 0; si < a.series.size(); ++si) {
    reports::Section s;
    s.title = a.series[si].series.key.display();
    s.source = "history";
    std::size_t n = 0, samples = 0;
    for (const auto& v : a.series[si].series.samples) {
      n += !v.empty();
      samples += v.size();
    }
    s.intro = fmt::format("{} commits with runs, {} samples (at most {} drawn per commit).", n, samples, max_samples);
    s.figures.push_back(trend_plot(a, si, max_samples));
    r.sections.push_back(std::move(s));
  }
  return r;
}

std::string summary_markdown(const Analysis& a) {
  reports::Report r;
  r.title = "layerbench history";
  r.sections.push_back(summary_section(a));
  return reports::render_markdown(r);
}

}  // namespace layerbench::history
