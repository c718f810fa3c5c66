// hyperfine --export-json: one row per command (its runs are independent, not pairs), and with
// two commands their ratio of medians with the Mann-Whitney test (unpaired).
#include "reports/paired.hpp"
#include "common/json_text.hpp"
#include "reports/sections.hpp"
#include "reports/units.hpp"
#include "stats/mann_whitney.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace layerbench::reports {

Section hyperfine_section(const nlohmann::json& doc, const std::string& path) {
  Section s;
  s.title = "hyperfine — " + file_stem(path);
  s.source = file_stem(path);
  s.intro = fmt::format("Source: `{}` (hyperfine --export-json). Each command's runs are independent samples, not "
                        "interleaved pairs: drift between the commands is not cancelled.", path);
  Table t;
  t.title = "Commands";
  t.headers = {"command", "runs", "median", "mean", "sd", "min", "max"};
  t.align = {Align::left};
  std::vector<std::vector<double>> ms;  // each command's times in ms
  for (const auto& r : doc["results"]) {
    std::vector<double> times;
    try {
      for (const auto& v : r["times"]) times.push_back(1e3 * v.get<double>());
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format("{}: results[].times: {}", path, e.what()));
    }
    if (times.empty()) throw std::runtime_error(fmt::format("{}: {}: no times", path, json_text(r["command"])));
    const auto sum = stats::summarize(times);
    const std::string command = r["command"].is_string() ? r["command"].get<std::string>() : json_text(r["command"]);
    t.add_row({command, std::to_string(times.size()), fmt_time(sum.median), fmt_time(sum.mean), fmt_time(sum.sd),
               fmt_time(sum.min), fmt_time(sum.max)});
    ms.push_back(std::move(times));
  }
  s.tables.push_back(std::move(t));
  if (ms.size() >= 2) {
    const double b = stats::summarize(ms[0]).median, c = stats::summarize(ms[1]).median;
    const auto mw = stats::mann_whitney_u(ms[1], ms[0]);
    s.notes.push_back(fmt::format("Second command against the first, ratio of medians {} (Mann-Whitney U two-sided "
                                  "p = {:.3g}, unpaired).", ratio_text(c, b, "ms"), mw.p));
  }
  return s;
}

}  // namespace layerbench::reports
