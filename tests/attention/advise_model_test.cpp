// The topology advisor's model on the host: collective interpolation and group-size conversion,
// the Ring overlap, and the calibration against committed 2xH200 results: with the local work of
// the committed attention runs (their attention and pad_pack components) and the communication
// of the committed collective sweep, each measured forward lies inside its predicted interval.
#include "attention/advise_model.hpp"
#include "collectives/error.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace layerbench::attention {
namespace {

std::string results_dir() {
  const char* d = std::getenv("LB_RESULTS_DIR");
  return d ? d : "results";
}

reports::Measurement point(const std::string& op, double bytes, std::vector<double> samples) {
  reports::Measurement m;
  m.name = op;
  m.params = {{"bytes", bytes}, {"in_place", false}};
  m.samples_ms = std::move(samples);
  return m;
}

CollModel synthetic() {
  reports::ResultFile f;
  f.path = "synthetic";
  f.config = {{"group_size", 2}};
  f.results = {point("all_gather", 1e6, {1, 1, 1}), point("all_gather", 4e6, {4, 4, 4}),
               point("all_to_all", 1e6, {2, 2, 2}), point("all_to_all", 4e6, {8, 8, 8})};
  CollModel c;
  c.add(f);
  return c;
}

}  // namespace

TEST(AdviseModel, InterpolatesInBytesAndConvertsGroupSizes) {
  const CollModel c = synthetic();
  EXPECT_DOUBLE_EQ(c.time("all_gather", 1e6, 2).median, 1.0);
  EXPECT_NEAR(c.time("all_gather", 2e6, 2).median, 2.0, 1e-9);  // log-log between 1 and 4 MB
  EXPECT_DOUBLE_EQ(c.time("all_gather", 8e6, 2).median, 8.0);   // constant bandwidth above
  EXPECT_DOUBLE_EQ(c.time("all_gather", 1e3, 2).median, 1.0);   // latency floor below
  std::string how;
  // 4 ranks without a 4-rank sweep: refused, naming the sizes there are and the flag.
  try {
    (void)c.time("all_gather", 1e6, 4);
    ADD_FAILURE() << "a group size without a sweep was costed";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no all_gather sweep of 4 ranks"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sweeps of 2 ranks"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--coll-rescale"), std::string::npos) << e.what();
  }
  // Allowed (--coll-rescale): 4 ranks from the 2-rank sweep, bus factor 3/4 over 1/2.
  CollModel r = c;
  r.rescale = true;
  EXPECT_NEAR(r.time("all_gather", 1e6, 4, &how).median, 1.5, 1e-12);
  EXPECT_NE(how.find("through its bus bandwidth"), std::string::npos);
  // A Ring step of M bytes each way: a 2-rank all_to_all of 2M.
  EXPECT_DOUBLE_EQ(c.p2p(2e6).median, 8.0);
  EXPECT_THROW(c.time("all_reduce", 1e6, 2), UsageError);
}

TEST(AdviseModel, RingOverlapTakesTheLongerOfComputeAndTransfer) {
  const CollModel c = synthetic();
  Problem p;
  p.seq = 1 << 10;
  p.heads = 4;
  p.head_dim = 128;
  const Topology t = parse_topology("ring2");
  LocalTimes local;
  local.attention = {10, 9, 11};
  local.step = {{5, 4.5, 5.5}, {5, 4.5, 5.5}};
  // K and V of one 512-row block: 2 x 512 x 4 x 128 x 2 B = 1 MiB each way.
  const double step_bytes = 2.0 * 512 * 4 * 128 * 2;
  const double transfer = c.p2p(step_bytes).median;
  const Prediction pr = predict(t, p, local, c, 0.0);
  EXPECT_NEAR(pr.total.median, std::max(5.0, transfer) + 5.0, 1e-9);
  const Prediction wide = predict(t, p, local, c, 0.1);
  EXPECT_NEAR(wide.total.hi - pr.total.hi, 0.1 * pr.total.median, 1e-9);
}

TEST(AdviseModel, CoversTheCommittedTwoGpuRuns) {
  const std::string dir = results_dir();
  CollModel coll;
  coll.add(reports::load_result_file(dir + "/coll/2026-11-30-h200x2-c/coll.json"));
  int cases = 0;
  double widest = 0;
  for (const char* name : {"attn_h14.json", "attn_h7.json"}) {
    const auto f = reports::load_result_file(dir + "/attn/2026-11-30-h200x2-a/" + name);
    const auto local = local_times_from(f);
    for (const auto& m : f.results) {
      if (m.name != "total") continue;
      Problem p;
      p.seq = m.params["seq"].get<long long>();
      p.heads = m.params["heads"].get<int>();
      p.head_dim = m.params["head_dim"].get<int>();
      p.batch = m.params["batch"].get<long long>();
      p.text_tokens = m.params["text_tokens"].get<long long>();
      const Topology t = parse_topology(m.params["topology"].get<std::string>());
      const Prediction pr = predict(t, p, local.at(m.group), coll, 0.05);
      const double measured = interval_of(m).median;
      const double half = 50.0 * (pr.total.hi - pr.total.lo) / pr.total.median;
      widest = std::max(widest, half);
      std::printf("%s %s: measured %.3f ms, predicted %.3f [%.3f, %.3f] (half-width %.1f%%)\n", name, m.group.c_str(),
                  measured, pr.total.median, pr.total.lo, pr.total.hi, half);
      EXPECT_GE(measured, pr.total.lo) << m.group;
      EXPECT_LE(measured, pr.total.hi) << m.group;
      ++cases;
    }
  }
  EXPECT_EQ(cases, 15);
  EXPECT_LT(widest, 15.0);  // an interval, not a shrug
}

// The advice is a document section: ranked fastest first, a row per topology, and the markdown the
// markdown printer makes of it, followed by how the communication was obtained.
TEST(AdviseModel, AdviceIsARankedSection) {
  Prediction slow{"cp2", {2.0, 1.9, 2.1}, {{"attention", {2.0, 1.9, 2.1}}}, {"note b"}};
  Prediction fast{"ring2", {1.0, 0.9, 1.1}, {{"attention", {1.0, 0.9, 1.1}}}, {"note a"}};
  const auto s = advice_section("Advice", {slow, fast});
  EXPECT_EQ(s.title, "Advice (PREDICTION, not a measurement)");
  ASSERT_EQ(s.tables.size(), 1u);
  ASSERT_EQ(s.tables[0].rows.size(), 2u);
  EXPECT_EQ(s.tables[0].rows[0][1], "ring2");
  EXPECT_EQ(s.tables[0].rows[0][5], "fastest predicted");
  EXPECT_EQ(s.tables[0].rows[1][5], "+100.0% (resolved: intervals apart)");
  const auto md = advice_markdown("Advice", {slow, fast}, 0.05);
  EXPECT_EQ(md.rfind(reports::to_markdown(s, 3) + "How the communication was obtained:\n- note a\n- note b\n", 0), 0u)
      << md;
}

}  // namespace layerbench::attention
