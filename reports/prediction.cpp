#include "reports/prediction.hpp"

#include "common/usage.hpp"
#include "reports/units.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
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

nlohmann::json to_json(const Prediction& p) {
  nlohmann::json parts = nlohmann::json::array();
  for (const auto& [n, x] : p.parts) parts.push_back({{"name", n}, {"median_ms", x.median}, {"lo_ms", x.lo}, {"hi_ms", x.hi}});
  return {{"label", p.label}, {"predicted_ms", p.total.median}, {"lo_ms", p.total.lo}, {"hi_ms", p.total.hi},
          {"prediction", true}, {"parts", parts}, {"notes", p.notes}};
}

Prediction prediction_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::runtime_error("an advice entry is not an object");
  auto number = [](const nlohmann::json& o, const char* key) {
    if (!o.contains(key) || !o[key].is_number()) throw std::runtime_error(fmt::format("advice entry: no number \"{}\"", key));
    return o[key].get<double>();
  };
  Prediction p;
  for (const char* key : {"label", "layout", "topology"})
    if (j.contains(key) && j[key].is_string()) {
      p.label = j[key].get<std::string>();
      break;
    }
  if (p.label.empty()) throw std::runtime_error("advice entry: no \"label\"");
  p.total = {number(j, "predicted_ms"), number(j, "lo_ms"), number(j, "hi_ms")};
  auto interval = [&](const nlohmann::json& x) { return Interval{number(x, "median_ms"), number(x, "lo_ms"), number(x, "hi_ms")}; };
  if (j.contains("parts") && j["parts"].is_array())  // in the layer's order
    for (const auto& x : j["parts"]) p.parts.emplace_back(x.value("name", std::string("?")), interval(x));
  else if (j.contains("parts") && j["parts"].is_object())  // files of 2026-12-03: by name
    for (const auto& [n, x] : j["parts"].items()) p.parts.emplace_back(n, interval(x));
  if (j.contains("notes") && j["notes"].is_array())
    for (const auto& n : j["notes"])
      if (n.is_string()) p.notes.push_back(n.get<std::string>());
  return p;
}

std::vector<Prediction> ranked(std::vector<Prediction> preds) {
  std::stable_sort(preds.begin(), preds.end(),
                   [](const Prediction& a, const Prediction& b) { return a.total.median < b.total.median; });
  return preds;
}

namespace {
// A difference in percent: one decimal, or significant digits where one decimal would read 0.0.
std::string percent_diff(double d) { return std::abs(d) >= 0.05 ? fmt::format("{:+.1f}", d) : fmt_sig_signed(d, 2); }
}  // namespace

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
                      : fmt::format("{}% ({})", percent_diff(100.0 * (p.total.median / best.median - 1)),
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
