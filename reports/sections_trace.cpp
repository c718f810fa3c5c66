// The report's section of a trace (reports/trace.hpp): what was traced, per component, beside
// the timeline of the whole trace and of one iteration.
#include "reports/svg.hpp"
#include "reports/trace.hpp"
#include "reports/units.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>

namespace layerbench::reports {
namespace {

constexpr const char* kKinds[] = {"component", "collective", "wait"};
// Okabe-Ito blue, vermillion and a grey: a wait reads as no work.
constexpr const char* kKindColours[] = {"#0072B2", "#D55E00", "#9A9A9A"};

std::size_t kind_of(const TraceSlice& s) {
  if (s.cat == "collective") return 1;
  if (s.cat == "wait") return 2;
  return 0;
}

// Depth of every slice within its track (0: top level), from the nesting of the time spans.
std::vector<int> depths(const std::vector<TraceSlice>& slices) {
  std::vector<std::size_t> order(slices.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = slices[a];
    const auto& y = slices[b];
    return std::make_tuple(x.pid, x.tid, x.ts_ns, -x.dur_ns) < std::make_tuple(y.pid, y.tid, y.ts_ns, -y.dur_ns);
  });
  std::vector<int> depth(slices.size(), 0);
  std::vector<std::size_t> open;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const auto& s = slices[order[k]];
    while (!open.empty()) {
      const auto& top = slices[open.back()];
      if (top.pid != s.pid || top.tid != s.tid || top.ts_ns + top.dur_ns <= s.ts_ns) open.pop_back();
      else break;
    }
    depth[order[k]] = static_cast<int>(open.size());
    open.push_back(order[k]);
  }
  return depth;
}

struct Rows {
  std::vector<std::string> names;
  std::map<std::pair<int, int>, std::size_t> index;
};

Rows track_rows(const Trace& t) {
  std::set<std::pair<int, int>> used;
  for (const auto& s : t.slices) used.insert({s.pid, s.tid});
  Rows rows;
  for (const auto& [pid, tid] : used) {
    rows.index[{pid, tid}] = rows.names.size();
    rows.names.push_back(fmt::format("rank {} {}", pid, trace_track_name(tid)));
  }
  return rows;
}

int int_arg(const TraceSlice& s, const char* key, int fallback = -1) {
  const auto it = s.args.find(key);
  return it != s.args.end() && it->is_number_integer() ? it->get<int>() : fallback;
}

// Where a slice lands on a time axis: either the trace's own time, or with the time between
// series (set-up, warm-up, checks: nothing traced) cut out, each series' traced span placed after
// the one before it with a small fixed gap.
struct TimeMap {
  std::map<int, std::pair<std::int64_t, std::int64_t>> shift;  // series -> (its start, where it lands)
  std::int64_t operator()(const TraceSlice& s, std::int64_t ns) const {
    const auto it = shift.find(int_arg(s, "series"));
    return it == shift.end() ? ns : ns - it->second.first + it->second.second;
  }
};

TimeMap compress(const Trace& t) {
  std::map<int, std::pair<std::int64_t, std::int64_t>> span;
  for (const auto& s : t.slices) {
    auto [it, fresh] = span.try_emplace(int_arg(s, "series"), s.ts_ns, s.ts_ns + s.dur_ns);
    if (!fresh) {
      it->second.first = std::min(it->second.first, s.ts_ns);
      it->second.second = std::max(it->second.second, s.ts_ns + s.dur_ns);
    }
  }
  std::int64_t total = 0;
  for (const auto& [series, sp] : span) total += sp.second - sp.first;
  const std::int64_t gap = std::max<std::int64_t>(total / 200, 1);
  TimeMap m;
  std::int64_t at = 0;
  for (const auto& [series, sp] : span) {
    m.shift[series] = {sp.first, at};
    at += sp.second - sp.first + gap;
  }
  return m;
}

std::string timeline(const Trace& t, const std::vector<int>& depth, const std::string& title, std::int64_t from,
                     std::int64_t to, double unit_ns, const std::string& unit, const std::string& axis = "time",
                     const TimeMap& map = {}) {
  svg::Timeline tl;
  tl.title = title;
  tl.time = {axis, unit};
  const Rows rows = track_rows(t);
  tl.rows = rows.names;
  tl.kinds.assign(std::begin(kKinds), std::end(kKinds));
  tl.kind_colours.assign(std::begin(kKindColours), std::end(kKindColours));
  for (std::size_t i = 0; i < t.slices.size(); ++i) {
    const auto& s = t.slices[i];
    const std::int64_t b0 = map(s, s.ts_ns), e0 = map(s, s.ts_ns + s.dur_ns);
    if (e0 < from || b0 > to) continue;
    const double a = static_cast<double>(std::max(b0, from) - from) / unit_ns;
    const double b = static_cast<double>(std::min(e0, to) - from) / unit_ns;
    std::string label = s.name;
    if (s.args.contains("bytes")) label += " " + fmt_bytes(s.args["bytes"].get<double>());
    tl.bars.push_back({rows.index.at({s.pid, s.tid}), a, b, depth[i], kind_of(s), label});
  }
  return svg::render(tl);
}

// Per component (a series is one Runner measurement, numbered from 1 in the run's order, so
// components of the same name in several groups stay apart): the slices of all ranks and
// iterations, the collectives inside them and the waits before them.
struct Row {
  std::string name;
  std::vector<double> slice_ms, rank_max_ms;
  std::set<int> iterations;
  double collectives = 0, bytes = 0;
  std::vector<double> waits_ms;
};
using ComponentRows = std::map<std::pair<int, std::string>, Row>;

ComponentRows component_rows(const Trace& t) {
  ComponentRows rows;
  std::map<std::pair<int, long long>, std::pair<int, std::string>> component_of;  // (pid, id) -> row key
  for (const auto& s : t.slices) {
    if (s.cat != "component") continue;
    const std::pair<int, std::string> key{int_arg(s, "series"), s.name};
    auto& r = rows[key];
    r.name = s.name;
    r.slice_ms.push_back(static_cast<double>(s.dur_ns) / 1e6);
    if (s.pid == 0 && s.args.contains("rank_max_ms")) r.rank_max_ms.push_back(s.args["rank_max_ms"].get<double>());
    r.iterations.insert(int_arg(s, "iteration"));
    component_of[{s.pid, s.args.value("id", -1LL)}] = key;
  }
  for (const auto& s : t.slices) {
    if (s.cat == "collective") {
      const auto it = component_of.find({s.pid, s.args.value("parent", -1LL)});
      if (it == component_of.end()) continue;
      auto& r = rows[it->second];
      r.collectives += 1;
      r.bytes += s.args.value("bytes", 0.0);
    } else if (s.cat == "wait") {
      const auto it = rows.find({int_arg(s, "series"), s.args.value("before", std::string())});
      if (it != rows.end()) it->second.waits_ms.push_back(static_cast<double>(s.dur_ns) / 1e6);
    }
  }
  return rows;
}

Table component_table(const ComponentRows& rows) {
  Table tab;
  tab.title = "Traced components";
  tab.headers = {"measurement", "component", "iterations", "slice median", "rank-max median", "collectives / iter",
                 "bytes sent / iter", "barrier wait median"};
  tab.align = {Align::right, Align::left};
  const auto med = [](const std::vector<double>& v) { return v.empty() ? std::nan("") : stats::quantile(v, 0.5); };
  for (const auto& [key, r] : rows) {
    const double per = static_cast<double>(r.slice_ms.size());  // slices = iterations x ranks
    tab.add_row({std::to_string(key.first + 1), r.name, std::to_string(r.iterations.size()), fmt_time(med(r.slice_ms)),
                 fmt_time(med(r.rank_max_ms)),
                 fmt_sig(r.collectives / per), fmt_quantity(r.bytes / per, Unit::bytes),
                 r.waits_ms.empty() ? "—" : fmt_time(med(r.waits_ms))});
  }
  return tab;
}

}  // namespace

Section trace_section(const Trace& t, const std::string& path) {
  Section sec;
  sec.title = "Timeline: " + file_stem(path);
  sec.source = file_stem(path);
  sec.figures_beside_tables = true;
  const auto& meta = t.metadata;
  const double align_us = meta.value("alignment_error_us", 0.0);
  sec.intro = fmt::format(
      "Trace of `{}` ({} backend, {} rank{}): the first {} timed iterations of every measurement, one track per rank "
      "and stream. A component's slice is the sample the results table takes its rank-max from; collectives carry "
      "the bytes this rank sends and their peers; `barrier` slices are each rank's wait before an aligned iteration. "
      "Ranks' clocks are aligned to rank 0's within {:.3g} µs (ping-pong, smallest round trip); device marks are "
      "placed on the host clock within {:.3g} µs.",
      meta.value("binary", std::string("?")), meta.value("backend", std::string("?")), t.ranks, t.ranks == 1 ? "" : "s",
      meta.value("traced_iterations", 0), align_us, meta.value("device_origin_error_us", 0.0));

  const ComponentRows rows = component_rows(t);
  sec.tables.push_back(component_table(rows));
  if (t.slices.empty()) {
    sec.notes.push_back("the trace holds no slices (nothing was timed)");
    return sec;
  }

  const auto depth = depths(t.slices);
  // The whole run is mostly untraced time (set-up, warm-up, checks): the overview cuts it out.
  const TimeMap map = compress(t);
  std::int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (const auto& s : t.slices) {
    t0 = std::min(t0, map(s, s.ts_ns));
    t1 = std::max(t1, map(s, s.ts_ns + s.dur_ns));
  }
  sec.figures.push_back(timeline(t, depth, "Every traced iteration (untraced time between measurements cut out)", t0,
                                 t1, 1e6, "ms", "traced time", map));

  // One iteration up close: of the whole layer where there is one (its first measurement),
  // else of the component with the most collectives per slice; its first traced iteration on
  // every rank, with the barrier wait before it.
  std::pair<int, std::string> best = rows.begin()->first;
  double most = -1;
  bool layer = false;
  for (const auto& [key, r] : rows) {
    const double per = r.collectives / static_cast<double>(r.slice_ms.size());
    if (layer) break;
    if (key.second == "whole_layer") {
      best = key;
      layer = true;
    } else if (per > most) {
      most = per;
      best = key;
    }
  }
  const int first_iter = *rows.at(best).iterations.begin();
  std::int64_t z0 = INT64_MAX, z1 = INT64_MIN;
  for (const auto& s : t.slices) {
    const bool mine = int_arg(s, "series") == best.first && int_arg(s, "iteration") == first_iter &&
                      (s.cat == "component" ? s.name == best.second : s.args.value("before", s.name) == best.second);
    if (!mine) continue;
    z0 = std::min(z0, s.ts_ns);
    z1 = std::max(z1, s.ts_ns + s.dur_ns);
  }
  if (z0 < z1)
    sec.figures.push_back(timeline(t, depth, fmt::format("One iteration: {} (iteration {})", best.second, first_iter),
                                   z0, z1, 1e3, "µs"));
  return sec;
}

}  // namespace layerbench::reports
