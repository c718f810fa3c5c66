#include "reports/trace.hpp"
#include "common/usage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>

namespace layerbench::reports {

std::string trace_track_name(int tid) {
  switch (tid) {
    case kTrackHost: return "host";
    case kTrackCompute: return "compute stream";
    case kTrackComm: return "comm stream";
    default: return fmt::format("comm, request {} in flight", tid - kTrackComm + 1);
  }
}

void spread_overlapping_requests(Trace& trace) {
  std::vector<TraceSlice*> comm;
  for (auto& s : trace.slices)
    if (s.tid == kTrackComm) comm.push_back(&s);
  std::stable_sort(comm.begin(), comm.end(), [](const TraceSlice* a, const TraceSlice* b) {
    return std::make_tuple(a->pid, a->ts_ns) < std::make_tuple(b->pid, b->ts_ns);
  });
  int lanes = 1, pid = -1;
  std::vector<std::int64_t> lane_end;  // per lane of the current rank: where its last slice ends
  for (TraceSlice* s : comm) {
    if (s->pid != pid) {
      pid = s->pid;
      lane_end.clear();
    }
    std::size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > s->ts_ns) ++lane;
    if (lane == lane_end.size()) lane_end.push_back(0);
    lane_end[lane] = s->ts_ns + s->dur_ns;
    s->tid = kTrackComm + static_cast<int>(lane);
    lanes = std::max(lanes, static_cast<int>(lane_end.size()));
  }
  for (int t = kTrackComm + 1; t < kTrackComm + lanes; ++t)
    if (std::find(trace.tracks.begin(), trace.tracks.end(), t) == trace.tracks.end()) trace.tracks.push_back(t);
}

namespace {
// Microseconds as a JSON number with the nanoseconds kept exactly (an integer ns / 1000).
nlohmann::json micros(std::int64_t ns) {
  const std::int64_t a = ns < 0 ? -ns : ns;
  return nlohmann::json::parse(fmt::format("{}{}.{:03d}", ns < 0 ? "-" : "", a / 1000, a % 1000));
}
std::int64_t nanos(const nlohmann::json& us) { return std::llround(us.get<double>() * 1000.0); }
}  // namespace

nlohmann::json to_chrome_json(const Trace& trace) {
  auto events = nlohmann::json::array();
  for (int r = 0; r < trace.ranks; ++r) {
    const std::string pname =
        r < static_cast<int>(trace.process_names.size()) ? trace.process_names[static_cast<std::size_t>(r)]
                                                          : fmt::format("rank {}", r);
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", r}, {"tid", 0}, {"args", {{"name", pname}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", r}, {"tid", 0}, {"args", {{"sort_index", r}}}});
    for (int t : trace.tracks) {
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", r}, {"tid", t},
                        {"args", {{"name", trace_track_name(t)}}}});
      events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", r}, {"tid", t}, {"args", {{"sort_index", t}}}});
    }
  }
  std::vector<const TraceSlice*> order;
  order.reserve(trace.slices.size());
  for (const auto& s : trace.slices) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const TraceSlice* a, const TraceSlice* b) {
    return std::make_tuple(a->pid, a->tid, a->ts_ns, -a->dur_ns) < std::make_tuple(b->pid, b->tid, b->ts_ns, -b->dur_ns);
  });
  for (const TraceSlice* s : order)
    events.push_back({{"ph", "X"}, {"name", s->name}, {"cat", s->cat}, {"pid", s->pid}, {"tid", s->tid},
                      {"ts", micros(s->ts_ns)}, {"dur", micros(s->dur_ns)}, {"args", s->args}});
  nlohmann::json meta = trace.metadata;
  meta["schema"] = kTraceSchema;
  meta["ranks"] = trace.ranks;
  return {{"traceEvents", events}, {"displayTimeUnit", "ns"}, {"otherData", meta}};
}

bool is_trace_json(const nlohmann::json& doc) {
  return doc.is_object() && doc.contains("traceEvents") && doc.contains("otherData") && doc["otherData"].is_object() &&
         doc["otherData"].value("schema", std::string{}) == kTraceSchema;
}

Trace parse_trace(const nlohmann::json& doc, const std::string& path) {
  if (!is_trace_json(doc)) throw UsageError(path + ": not a layerbench trace (" + kTraceSchema + ")");
  Trace t;
  t.metadata = doc["otherData"];
  t.ranks = t.metadata.value("ranks", 0);
  t.process_names.resize(static_cast<std::size_t>(std::max(t.ranks, 0)));
  try {
    for (const auto& e : doc["traceEvents"]) {
      const std::string ph = e.value("ph", "");
      const int pid = e.value("pid", 0), tid = e.value("tid", 0);
      if (ph == "M") {
        const std::string what = e.value("name", "");
        if (what == "process_name" && pid >= 0 && pid < t.ranks)
          t.process_names[static_cast<std::size_t>(pid)] = e["args"].value("name", "");
        if (what == "thread_name" && pid == 0) t.tracks.push_back(tid);
      } else if (ph == "X") {
        TraceSlice s;
        s.name = e.value("name", "");
        s.cat = e.value("cat", "");
        s.pid = pid;
        s.tid = tid;
        s.ts_ns = nanos(e.at("ts"));
        s.dur_ns = nanos(e.at("dur"));
        s.args = e.value("args", nlohmann::json::object());
        t.slices.push_back(std::move(s));
      }
    }
  } catch (const nlohmann::json::exception& ex) {
    throw UsageError(path + ": malformed trace event (" + ex.what() + ")");
  }
  return t;
}

}  // namespace layerbench::reports
