#include "study/history/findings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace layerbench::history {
namespace {

std::string pct(double v) { return std::isfinite(v) ? fmt::format("{:+.2f}%", 100 * v) : (v > 0 ? "+inf" : "-inf"); }

// The confirmation that decides a finding: among those whose bracket (before, after] holds the
// finding's whole range, a confirmed one first (the narrowest), then a refuted one.
void apply_confirmations(Finding& f, const SeriesKey& key, const std::vector<Confirmation>& all,
                         const std::map<std::string, std::size_t>& pos) {
  const Confirmation* best = nullptr;
  auto rank = [](const std::string& v) { return v == "confirmed" ? 0 : v == "refuted" ? 1 : 2; };
  for (const auto& c : all) {
    if (!c.benchmark.empty() && c.benchmark != key.benchmark) continue;
    const auto b = pos.find(c.before_sha), a = pos.find(c.after_sha);
    if (b == pos.end() || a == pos.end()) continue;
    if (!(b->second < f.range_low_pos && a->second >= f.range_high_pos)) continue;
    const auto width = [&](const Confirmation* x) { return pos.at(x->after_sha) - pos.at(x->before_sha); };
    if (!best || rank(c.verdict) < rank(best->verdict) ||
        (rank(c.verdict) == rank(best->verdict) && width(&c) < width(best)))
      best = &c;
  }
  if (!best) return;
  f.confirmation = *best;
  if (best->verdict == "confirmed" || best->verdict == "refuted") f.status = best->verdict;
}

}  // namespace

Analysis analyze(Store& store, const stats::ChangePointOptions& options) {
  options.validate();
  Analysis a;
  a.options = options;
  a.commits = store.commits();
  a.marks = store.marks();
  const auto confirmations = store.confirmations();
  std::map<std::string, std::size_t> pos;
  for (std::size_t i = 0; i < a.commits.size(); ++i) pos[a.commits[i].sha] = i;
  for (auto& s : store.series()) {
    SeriesPoints sp;
    for (std::size_t i = 0; i < s.samples.size(); ++i) {
      if (s.samples[i].empty()) continue;
      sp.commit_pos.push_back(i);
      sp.points.push_back(stats::commit_point(s.samples[i]));
    }
    sp.series = std::move(s);
    a.series.push_back(std::move(sp));
  }
  for (std::size_t si = 0; si < a.series.size(); ++si) {
    const auto& sp = a.series[si];
    for (const auto& step : stats::detect_changes(sp.points, options)) {
      Finding f;
      f.series = si;
      f.step = step;
      f.before_pos = sp.commit_pos[step.range_low - 1];
      f.range_low_pos = f.before_pos + 1;  // commits without a run of this series may hold it too
      f.range_high_pos = sp.commit_pos[step.range_high];
      f.before_sha = a.commits[f.before_pos].sha;
      f.first_after_sha = a.commits[sp.commit_pos[step.index]].sha;
      for (std::size_t p = f.range_low_pos; p <= f.range_high_pos; ++p) f.range_shas.push_back(a.commits[p].sha);
      for (const auto& m : a.marks) {
        if (m.kind != "expected" || (!m.benchmark.empty() && m.benchmark != sp.series.key.benchmark)) continue;
        const auto p = pos.at(m.sha);
        if (p >= f.range_low_pos && p <= f.range_high_pos) f.status = "expected";
      }
      if (f.status != "expected") apply_confirmations(f, sp.series.key, confirmations, pos);
      a.findings.push_back(std::move(f));
    }
  }
  for (auto& f : a.findings)
    for (const auto& g : a.findings)
      if (&f != &g && g.range_low_pos <= f.range_high_pos && f.range_low_pos <= g.range_high_pos)
        f.moved_together.push_back(a.series[g.series].series.key.display());
  return a;
}

int exit_code(const Analysis& a) {
  bool suspected = false;
  for (const auto& f : a.findings) {
    if (f.status == "confirmed" && f.regression()) return 1;
    suspected |= f.status == "suspected";
  }
  return suspected ? 3 : 0;
}

std::string findings_text(const Analysis& a) {
  if (a.findings.empty())
    return fmt::format("no change points in {} series over {} commits\n", a.series.size(), a.commits.size());
  std::string out;
  for (const auto& f : a.findings) {
    const auto& s = f.step;
    out += fmt::format("{} {}: {} {} [{}, {}] at {} (range {}..{}, {} commit(s) after {}), p {:.3g}, z {:.1f}",
                       f.status, a.series[f.series].series.key.display(), f.regression() ? "rose" : "fell",
                       pct(s.relative), pct(s.interval.low), pct(s.interval.high), f.first_after_sha,
                       f.range_shas.front(), f.range_shas.back(), f.range_shas.size(), f.before_sha, s.p, s.z);
    if (f.confirmation)
      out += fmt::format("; A/B {}..{}: {} after {} pairs", f.confirmation->before_sha, f.confirmation->after_sha,
                         f.confirmation->verdict, f.confirmation->pairs);
    if (!f.moved_together.empty()) out += fmt::format("; moved together: {}", fmt::join(f.moved_together, ", "));
    out += "\n";
  }
  return out;
}

nlohmann::json findings_json(const Analysis& a) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& f : a.findings) {
    const auto& k = a.series[f.series].series.key;
    const auto& s = f.step;
    nlohmann::json j = {{"benchmark", k.benchmark},
                        {"metric", k.metric},
                        {"unit", k.unit},
                        {"machine", k.machine},
                        {"status", f.status},
                        {"first_commit_after", f.first_after_sha},
                        {"last_commit_before", f.before_sha},
                        {"commit_range", f.range_shas},
                        {"relative", s.relative},
                        {"interval", {{"confidence", a.options.confidence}, {"low", s.interval.low}, {"high", std::isfinite(s.interval.high) ? nlohmann::json(s.interval.high) : nlohmann::json(nullptr)}}},
                        {"p", s.p},
                        {"z", s.z},
                        {"commits_before", s.pre},
                        {"commits_after", s.post},
                        {"moved_together", f.moved_together}};
    if (f.confirmation)
      j["confirmation"] = {{"before", f.confirmation->before_sha}, {"after", f.confirmation->after_sha},
                           {"verdict", f.confirmation->verdict}, {"pairs", f.confirmation->pairs},
                           {"relative", f.confirmation->relative}, {"low", f.confirmation->low},
                           {"high", f.confirmation->high}, {"journal", f.confirmation->journal}};
    items.push_back(std::move(j));
  }
  return {{"schema", "layerbench-history-detect/1"},
          {"commits", a.commits.size()},
          {"series", a.series.size()},
          {"options",
           {{"threshold", a.options.threshold}, {"min_magnitude", a.options.min_magnitude},
            {"min_post", a.options.min_post}, {"window", a.options.window}}},
          {"exit_code", exit_code(a)},
          {"changes", items}};
}

}  // namespace layerbench::history
