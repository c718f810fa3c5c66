#include "bench/attn/report.hpp"

#include "reports/derived.hpp"
#include "reports/profile.hpp"
#include "reports/table.hpp"
#include "reports/units.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace layerbench::attention {

const reports::Measurement* total_of(const std::vector<reports::Measurement>& results, const std::string& group) {
  for (const auto& m : results)
    if (m.group == group && m.role == reports::Role::total) return &m;
  return nullptr;
}

std::string case_markdown(const std::vector<reports::Measurement>& results, const CaseRef& c,
                          const std::string& note) {
  const auto comp = reports::composition(results, c.group, "");  // the heading names the case
  std::string md = fmt::format("\n#### {}\n\n{}", c.group, reports::to_markdown(comp.table));
  if (!comp.warnings.empty()) md += "\n";
  for (const auto& w : comp.warnings) md += "- warning: " + w + "\n";
  if (!comp.warnings.empty() && !note.empty()) md += "- " + note + "\n";
  return md;
}

Comparison compare_totals(const std::vector<reports::Measurement>& results, const std::vector<CaseRef>& cases,
                          double confidence) {
  Comparison out;
  std::vector<const reports::Measurement*> totals;
  for (const auto& c : cases) totals.push_back(total_of(results, c.group));
  // The fastest by median, then whether every other total is resolved slower than it.
  const reports::Measurement* fastest = nullptr;
  for (const auto* t : totals)
    if (t && (!fastest || reports::median_ms(*t) < reports::median_ms(*fastest))) fastest = t;
  std::vector<std::string> unresolved;
  for (std::size_t i = 0; i < cases.size(); ++i)
    if (totals[i] && totals[i] != fastest && !reports::ratio_of_medians(*totals[i], *fastest, confidence).resolved)
      unresolved.push_back(cases[i].topology);

  reports::Table t;
  t.headers = {"topology", "total (median)", "forward rate", fmt::format("vs {} (ratio of medians)", cases.front().topology),
               "fastest (every interval excludes 1)"};
  t.align = {reports::Align::left, reports::Align::right, reports::Align::right, reports::Align::right,
             reports::Align::left};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto* m = totals[i];
    if (!m) {
      out.vs_first.emplace_back(nullptr);
      t.add_row({cases[i].topology, "not timed", "", "", ""});
      continue;
    }
    std::string vs = "baseline";
    if (i > 0 && totals.front()) {
      const auto e = reports::ratio_of_medians(*m, *totals.front(), confidence);
      out.vs_first.push_back(e.to_json());
      vs = e.text();
    } else {
      out.vs_first.emplace_back(nullptr);
    }
    std::string mark;
    if (m == fastest && cases.size() > 1)
      mark = unresolved.empty() ? "fastest"
                                : fmt::format("lowest median, not resolved against {} (interval contains 1)",
                                              fmt::join(unresolved, ", "));
    t.add_row({cases[i].topology, reports::fmt_time(reports::median_ms(*m)), reports::rate_text(*m), vs, mark});
  }
  out.markdown = reports::to_markdown(t);
  return out;
}

}  // namespace layerbench::attention
