#include "reports/prediction.hpp"

#include "common/usage.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace layerbench::reports {

Interval interval_of(const Measurement& m) {
  if (m.samples_ms.empty()) throw std::runtime_error("a measurement without samples: " + m.name);
  const auto s = stats::summarize(m.samples_ms);
  return {s.median, s.p10, s.p90};
}

Interval scaled(const Interval& t, double f) { return {t.median * f, t.lo * f, t.hi * f}; }

Interval maxed(const Interval& a, const Interval& b) {
  return {std::max(a.median, b.median), std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
}

Interval widened(Interval t, double margin) {
  t.lo -= margin * t.median;
  t.hi += margin * t.median;
  return t;
}

std::vector<Prediction> ranked(std::vector<Prediction> preds) {
  std::stable_sort(preds.begin(), preds.end(),
                   [](const Prediction& a, const Prediction& b) { return a.total.median < b.total.median; });
  return preds;
}

Section advice_section(const std::string& title, std::vector<Prediction> preds, const std::string& candidate,
                       const std::string& total) {
  preds = ranked(std::move(preds));
  Table t;
  t.headers = {"rank", candidate, total, "interval ms", "half-width", "vs fastest", "parts (median ms)"};
  t.align.assign(t.headers.size(), Align::left);
  for (std::size_t i = 0; i < preds.size(); ++i) {
    const auto& p = preds[i];
    std::string parts;
    for (const auto& [name, x] : p.parts) parts += fmt::format("{}{} {:.3f}", parts.empty() ? "" : "; ", name, x.median);
    const auto& best = preds.front().total;
    const bool resolved = i > 0 && best.hi < p.total.lo;
    t.add_row({fmt::format("{}", i + 1), p.label, fmt::format("{:.3f}", p.total.median),
               fmt::format("[{:.3f}, {:.3f}]", p.total.lo, p.total.hi),
               fmt::format("±{:.1f}%", 50.0 * (p.total.hi - p.total.lo) / p.total.median),
               i == 0 ? std::string("fastest predicted")
                      : fmt::format("{:+.1f}% ({})", 100.0 * (p.total.median / best.median - 1),
                                    resolved ? "resolved: intervals apart" : "not resolved: intervals overlap"),
               parts});
  }
  Section s;
  s.title = title + " (PREDICTION, not a measurement)";
  s.tables.push_back(std::move(t));
  return s;
}

std::vector<std::string> collected_notes(const std::vector<Prediction>& preds) {
  std::vector<std::string> notes;
  for (const auto& p : preds)
    for (const auto& n : p.notes)
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
  return notes;
}

std::string notes_markdown(const std::string& heading, const std::vector<Prediction>& preds) {
  std::string md = heading + ":\n";
  for (const auto& n : collected_notes(preds)) md += "- " + n + "\n";
  return md;
}

}  // namespace layerbench::reports
