#include "bench/attn/report.hpp"

#include "reports/derived.hpp"
#include "reports/profile.hpp"
#include "reports/table.hpp"
#include "reports/units.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>

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

namespace {
double median_of(std::vector<double> x) {
  if (x.empty()) return stats::nan_value;
  std::sort(x.begin(), x.end());
  const std::size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}
bool interleaved(const std::vector<RoundRobin>& runs, std::size_t c) {
  return !runs.empty() && c < runs.front().size() && runs.front()[c].size() >= 2;
}
}  // namespace

Comparison compare_totals(const std::vector<reports::Measurement>& results, const std::vector<CaseRef>& cases,
                          const std::vector<RoundRobin>& runs, double confidence) {
  Comparison out;
  const std::size_t n = cases.size();
  if (n == 0) return out;  // nothing timed at this length
  // The fastest by interleaved median, then whether every other case is resolved slower than it
  // by its paired ratio.
  std::optional<std::size_t> fastest;
  for (std::size_t c = 0; c < n; ++c)
    if (interleaved(runs, c) && (!fastest || median_of(runs.front()[c]) < median_of(runs.front()[*fastest]))) fastest = c;
  std::vector<std::string> unresolved;
  for (std::size_t c = 0; c < n; ++c)
    if (fastest && c != *fastest && interleaved(runs, c) &&
        !reports::paired_ratio(runs.front()[c], runs.front()[*fastest], confidence).resolved)
      unresolved.push_back(cases[c].topology);

  reports::Table t;
  t.headers = {"topology", "total (median, timed alone)", "forward rate", "interleaved forward (median)",
               fmt::format("vs {} (paired per-iteration ratio)", cases.front().topology)};
  if (runs.size() > 1) t.headers.push_back(fmt::format("vs {}: each of {} runs (spread)", cases.front().topology, runs.size()));
  t.headers.push_back("fastest (every interval excludes 1)");
  t.align.assign(t.headers.size(), reports::Align::right);
  t.align.front() = reports::Align::left;
  t.align.back() = reports::Align::left;
  for (std::size_t c = 0; c < n; ++c) {
    const auto* m = total_of(results, cases[c].group);
    std::vector<std::string> row = {cases[c].topology, m ? reports::fmt_time(reports::median_ms(*m)) : "not timed",
                                    m ? reports::rate_text(*m) : ""};
    row.push_back(interleaved(runs, c) ? reports::fmt_time(median_of(runs.front()[c])) : "not interleaved");
    nlohmann::json vs = nullptr;
    std::string vs_text = c == 0 ? "baseline" : "";
    std::string repeats_text = c == 0 ? "baseline" : "";
    if (c > 0 && interleaved(runs, c) && interleaved(runs, 0)) {
      const auto e = reports::paired_ratio(runs.front()[c], runs.front()[0], confidence);
      vs = e.to_json();
      vs_text = e.text();
      nlohmann::json reps = nlohmann::json::array();
      double lo = stats::nan_value, hi = stats::nan_value;
      std::string each;
      for (const auto& run : runs) {
        const auto r = reports::paired_ratio(run[c], run[0], confidence);
        reps.push_back(r.to_json());
        each += (each.empty() ? "" : "; ") + reports::fmt_sig(r.value);
        if (r.valid) {
          lo = std::isfinite(lo) ? std::min(lo, r.value) : r.value;
          hi = std::isfinite(hi) ? std::max(hi, r.value) : r.value;
        }
      }
      vs["repeats"] = reps;
      vs["spread"] = std::isfinite(lo) ? nlohmann::json(hi - lo) : nlohmann::json(nullptr);
      repeats_text = std::isfinite(lo) ? fmt::format("{} ({})", each, reports::fmt_sig(hi - lo)) : each;
    } else if (c > 0) {
      vs_text = "n/a (not interleaved)";
    }
    out.vs_first.push_back(vs);
    row.push_back(vs_text);
    if (runs.size() > 1) row.push_back(repeats_text);
    std::string mark;
    if (fastest && c == *fastest && n > 1)
      mark = unresolved.empty() ? "fastest"
                                : fmt::format("lowest median, not resolved against {} (interval contains 1)",
                                              fmt::join(unresolved, ", "));
    row.push_back(mark);
    t.add_row(row);
  }
  out.markdown = reports::to_markdown(t);
  return out;
}

}  // namespace layerbench::attention
