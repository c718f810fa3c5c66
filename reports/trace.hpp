#pragma once
// The trace document: slices of a run on one time line, one track per rank and stream, written as
// Chrome trace-event JSON (the "JSON Object Format": "traceEvents" of ph "X" complete slices and
// ph "M" names; pid = MPI rank, tid = stream), which Perfetto's UI and chrome://tracing open.
// harness/trace.hpp records it; layerbench-report draws it (trace_section).
#include "reports/sections.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace layerbench::reports {

inline constexpr const char* kTraceSchema = "layerbench-trace/1";

// Track ids within a rank (tid).
enum TraceTrackId : int { kTrackHost = 0, kTrackCompute = 1, kTrackComm = 2 };
// "host", "compute stream", "comm stream"; tids above kTrackComm hold collectives in flight at
// the same time as one on the comm stream (host backend: several MPI requests outstanding).
std::string trace_track_name(int tid);

struct TraceSlice {
  std::string name;
  std::string cat;   // "component", "collective" or "wait"
  int pid = 0;       // rank
  int tid = kTrackCompute;
  std::int64_t ts_ns = 0;   // on rank 0's clock, from the trace's start
  std::int64_t dur_ns = 0;
  nlohmann::json args = nlohmann::json::object();  // "id" (unique within the rank), "parent" (an id), ...
};

struct Trace {
  int ranks = 0;
  std::vector<std::string> process_names;  // one per rank ("rank 0 (host-a)")
  std::vector<int> tracks;                 // the tids every rank declares
  std::vector<TraceSlice> slices;
  nlohmann::json metadata = nlohmann::json::object();  // "otherData": schema, clock alignment, ...
};

// Moves every comm-stream slice that overlaps an earlier one of its rank onto the next comm track
// (kTrackComm + 1, + 2, ...), so that each track's slices are sequential; adds those tracks. On
// the CUDA backend a stream runs one collective at a time and nothing moves.
void spread_overlapping_requests(Trace& trace);

// Events sorted by (pid, tid, ts, longest first), so a track's slices are in time order with a
// parent before the slices it contains; ts and dur in microseconds with nanosecond digits.
nlohmann::json to_chrome_json(const Trace& trace);
bool is_trace_json(const nlohmann::json& doc);
// Throws std::runtime_error naming `path` on a document that is not a layerbench trace.
Trace parse_trace(const nlohmann::json& doc, const std::string& path);

// The report's section of a trace: per component the traced slices beside the timeline of the
// whole trace and of one iteration (SVG).
Section trace_section(const Trace& trace, const std::string& path);

}  // namespace layerbench::reports
