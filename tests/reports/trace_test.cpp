// The trace document (reports/trace.hpp): exact round trip of the Chrome JSON, requests in flight
// spread over comm tracks, the report's section, and sniffing.
#include "reports/inputs.hpp"
#include "reports/trace.hpp"

#include <gtest/gtest.h>

namespace layerbench::reports {
namespace {

TraceSlice slice(const std::string& name, const std::string& cat, int pid, int tid, std::int64_t ts, std::int64_t dur,
                 nlohmann::json args) {
  TraceSlice s;
  s.name = name;
  s.cat = cat;
  s.pid = pid;
  s.tid = tid;
  s.ts_ns = ts;
  s.dur_ns = dur;
  s.args = std::move(args);
  return s;
}

Trace two_rank_trace() {
  Trace t;
  t.ranks = 2;
  t.tracks = {kTrackHost, kTrackCompute, kTrackComm};
  t.metadata = {{"binary", "layerbench-moe"}, {"backend", "host"}, {"traced_iterations", 1}, {"alignment_error_us", 0.5}};
  for (int r = 0; r < 2; ++r) {
    t.slices.push_back(slice("barrier", "wait", r, kTrackHost, 1000, 2001 + r,
                             {{"id", 1}, {"series", 0}, {"iteration", 0}, {"before", "whole_layer"}}));
    t.slices.push_back(slice("whole_layer", "component", r, kTrackCompute, 5000, 100'001,
                             {{"id", 2}, {"series", 0}, {"iteration", 0}, {"sample_ms", 0.100001}, {"rank_max_ms", 0.100001}}));
    // Two requests in flight at once on the comm track, inside the component.
    t.slices.push_back(slice("sendrecv", "collective", r, kTrackComm, 6000, 50'000,
                             {{"id", 3}, {"parent", 2}, {"bytes", 4096}, {"peers", {0, 1}}}));
    t.slices.push_back(slice("sendrecv", "collective", r, kTrackComm, 7000, 50'000,
                             {{"id", 4}, {"parent", 2}, {"bytes", 4096}, {"peers", {0, 1}}}));
  }
  return t;
}

TEST(Trace, ChromeJsonRoundTripKeepsNanoseconds) {
  Trace t = two_rank_trace();
  t.slices.push_back(slice("early", "component", 1, kTrackCompute, -1234, 1, {{"id", 9}}));
  const auto doc = to_chrome_json(t);
  ASSERT_TRUE(is_trace_json(doc));
  EXPECT_EQ(doc["otherData"]["schema"], kTraceSchema);
  const Trace back = parse_trace(nlohmann::json::parse(doc.dump()), "t.json");
  ASSERT_EQ(back.slices.size(), t.slices.size());
  bool saw_negative = false;
  for (const auto& s : back.slices) {
    if (s.name == "early") {
      EXPECT_EQ(s.ts_ns, -1234);
      saw_negative = true;
    }
    if (s.name == "whole_layer") {
      EXPECT_EQ(s.dur_ns, 100'001);
    }
  }
  EXPECT_TRUE(saw_negative);
  EXPECT_EQ(back.ranks, 2);
  EXPECT_EQ(back.tracks.size(), 3u);
}

TEST(Trace, RequestsInFlightTogetherGoToTheirOwnCommTrack) {
  Trace t = two_rank_trace();
  spread_overlapping_requests(t);
  int moved = 0;
  for (const auto& s : t.slices)
    if (s.name == "sendrecv") {
      EXPECT_EQ(s.tid, s.ts_ns == 6000 ? kTrackComm : kTrackComm + 1);
      moved += s.tid == kTrackComm + 1;
    }
  EXPECT_EQ(moved, 2);  // one per rank
  EXPECT_EQ(t.tracks.size(), 4u);
  EXPECT_EQ(trace_track_name(kTrackComm + 1), "comm, request 2 in flight");
}

TEST(Trace, SectionHasTheComponentTableBesideTwoTimelines) {
  Trace t = two_rank_trace();
  const Section s = trace_section(t, "dir/moe-trace.json");
  EXPECT_TRUE(s.figures_beside_tables);
  ASSERT_EQ(s.tables.size(), 1u);
  ASSERT_EQ(s.tables[0].rows.size(), 1u);
  const auto& row = s.tables[0].rows[0];
  EXPECT_EQ(row[1], "whole_layer");
  EXPECT_EQ(row[5], "2.00");  // collectives per iteration and rank
  ASSERT_EQ(s.figures.size(), 2u);
  EXPECT_NE(s.figures[0].find("class=\"slice\""), std::string::npos);
  EXPECT_NE(s.figures[1].find("whole_layer"), std::string::npos);
}

TEST(Trace, SniffedAsATrace) {
  const std::string text = to_chrome_json(two_rank_trace()).dump();
  EXPECT_EQ(sniff_text(text, "t.json"), InputKind::trace_json);
  EXPECT_NE(not_paired_reason("t.json", InputKind::trace_json).find("trace"), std::string::npos);
}

}  // namespace
}  // namespace layerbench::reports
