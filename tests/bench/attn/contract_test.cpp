// layerbench-attn and the measurement contract: the JSON of a 4-rank host run declares a total
// per case, its parts and communication under it, and work whose rates are rates_of's; the
// markdown shows a part larger than its total with a warning and the reason; the fastest
// topology is named only when the intervals resolve it.
#include "bench/attn/report.hpp"
#include "reports/derived.hpp"
#include "reports/result.hpp"
#include "tests/bench/support/contract_check.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

using namespace layerbench;
using attention::CaseRef;

namespace {

reports::Measurement meas(const std::string& group, const std::string& name, reports::Role role, double center_ms) {
  reports::Measurement m;
  m.name = name;
  m.group = group;
  m.role = role;
  if (role != reports::Role::total) m.parent = "total";
  for (int i = 0; i < 20; ++i) m.samples_ms.push_back(center_ms * (1.0 + 0.002 * (i % 5)));
  return m;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(AttnReport, PartLargerThanItsTotalIsShownWithAWarningAndTheReason) {
  // As seen on 4 oversubscribed host ranks: the kernel timed alone above the whole forward.
  const std::string g = "usp4+uaa/S=128";
  const std::vector<reports::Measurement> r = {meas(g, "qkv_all_to_all", reports::Role::communication, 10),
                                               meas(g, "attention", reports::Role::part, 187.7),
                                               meas(g, "total", reports::Role::total, 120.9)};
  const auto md = attention::case_markdown(r, {g, "usp4+uaa", 128}, "reason on this run: oversubscribed");
  EXPECT_NE(md.find("- warning: attention (188 ms) exceeds its parent total (121 ms)"), std::string::npos) << md;
  EXPECT_NE(md.find("work that overlaps inside the parent"), std::string::npos) << md;
  EXPECT_NE(md.find("- reason on this run: oversubscribed"), std::string::npos) << md;
  EXPECT_NE(md.find("other / unaccounted"), std::string::npos) << md;

  // Parts within their total: no warning, no reason line.
  const std::vector<reports::Measurement> ok = {meas(g, "attention", reports::Role::part, 80),
                                                meas(g, "total", reports::Role::total, 120.9)};
  const auto md_ok = attention::case_markdown(ok, {g, "usp4+uaa", 128}, "reason on this run: oversubscribed");
  EXPECT_EQ(md_ok.find("warning"), std::string::npos) << md_ok;
  EXPECT_EQ(md_ok.find("reason on this run"), std::string::npos) << md_ok;
}

TEST(AttnReport, FastestOnlyWhereThePairedRatiosResolveIt) {
  const std::vector<CaseRef> cases = {{"a/S=1", "a", 1}, {"b/S=1", "b", 1}};
  const std::vector<reports::Measurement> totals = {meas("a/S=1", "total", reports::Role::total, 10),
                                                    meas("b/S=1", "total", reports::Role::total, 5)};
  // Forwards timed round-robin: the clocks drift over the run (every sample 2% above the last),
  // moving both topologies of an iteration alike; b takes half of a in every iteration.
  attention::RoundRobin drift(2);
  for (int i = 0; i < 20; ++i) {
    const double clock = std::pow(1.02, i);
    drift[0].push_back(10 * clock);
    drift[1].push_back(5 * clock * (1.0 + 0.001 * (i % 3)));
  }
  const auto c1 = attention::compare_totals(totals, cases, {drift}, 0.95);
  EXPECT_NE(c1.markdown.find("| fastest |"), std::string::npos) << c1.markdown;
  EXPECT_NE(c1.markdown.find("vs a (paired per-iteration ratio)"), std::string::npos) << c1.markdown;
  ASSERT_EQ(c1.vs_first.size(), 2u);
  EXPECT_TRUE(c1.vs_first[0].is_null());
  EXPECT_TRUE(c1.vs_first[1].at("resolved").get<bool>());
  EXPECT_NEAR(c1.vs_first[1].at("value").get<double>(), 0.5, 0.001);
  // The paired interval is as narrow as the per-iteration ratios, not as wide as the drift: the
  // unpaired ratio of medians of the same samples spreads over the whole drift.
  const auto ci = c1.vs_first[1].at("ci");
  EXPECT_LT(ci[1].get<double>() - ci[0].get<double>(), 0.002) << ci;
  reports::Measurement a, b;
  a.samples_ms = drift[1];
  b.samples_ms = drift[0];
  const auto unpaired = reports::ratio_of_medians(a, b, 0.95);
  EXPECT_GT(unpaired.ci.high - unpaired.ci.low, 0.05);

  // The same forwards: every paired interval contains 1, so no topology is called fastest.
  attention::RoundRobin same = {drift[0], drift[0]};
  same[1][3] *= 1.001;
  same[1][7] *= 0.999;
  const auto c2 = attention::compare_totals(totals, cases, {same}, 0.95);
  EXPECT_EQ(c2.markdown.find("| fastest |"), std::string::npos) << c2.markdown;
  EXPECT_NE(c2.markdown.find("not resolved against"), std::string::npos) << c2.markdown;
  EXPECT_NE(c2.markdown.find("unresolved"), std::string::npos) << c2.markdown;
  EXPECT_FALSE(c2.vs_first[1].at("resolved").get<bool>());

  // --repeat: each run's ratio and the spread between runs beside the first run's interval.
  attention::RoundRobin slower = drift;
  for (auto& v : slower[1]) v *= 1.1;
  const auto c3 = attention::compare_totals(totals, cases, {drift, slower}, 0.95);
  ASSERT_EQ(c3.vs_first[1].at("repeats").size(), 2u);
  EXPECT_NEAR(c3.vs_first[1].at("spread").get<double>(), 0.05, 0.001);
  EXPECT_NEAR(c3.vs_first[1].at("value").get<double>(), 0.5, 0.001);
  EXPECT_NE(c3.markdown.find("each of 2 runs (spread)"), std::string::npos) << c3.markdown;
}

TEST(AttnContract, JsonDeclaresTotalsPartsAndWork) {
  const auto mpiexec = test_support::env_path("LB_MPIEXEC"), bin = test_support::env_path("LB_ATTN");
  const std::string json = ::testing::TempDir() + "lb_attn_contract.json";
  const std::string md = ::testing::TempDir() + "lb_attn_contract.md";
  const auto out = test_support::run_mpi(mpiexec, 4, bin,
                                         "--backend host --dtype fp32 --head-dim 16 --warmup 1 --iterations 4 "
                                         "--heads 6 --seqs 64 --text-tokens 3 --topologies usp4+uaa,cp4,usp2+cp2 --repeat 2 "
                                         "--json " + json + " --markdown " + md);
  ASSERT_EQ(out.status, 0) << out.text;
  const auto doc = test_support::read_json(json);
  test_support::expect_rates_follow_work(doc);

  std::map<std::string, int> totals;
  for (const auto& r : doc.at("results")) {
    const std::string name = r.at("name"), role = r.at("role"), group = r.at("group");
    SCOPED_TRACE(group + " " + name);
    const auto& p = r.at("params");
    const double flops = 4.0 * p.at("batch").get<double>() * p.at("local_heads").get<double>() *
                         p.at("seq_q").get<double>() * p.at("seq_kv").get<double>() * p.at("head_dim").get<double>();
    if (name == "total") {
      EXPECT_EQ(role, "total");
      EXPECT_FALSE(r.contains("parent"));
      EXPECT_DOUBLE_EQ(r.at("work").at("flops").get<double>(), flops);
      ++totals[group];
      continue;
    }
    EXPECT_EQ(r.at("parent"), "total");
    if (name == "attention") {
      EXPECT_EQ(role, "part");
      EXPECT_DOUBLE_EQ(r.at("work").at("flops").get<double>(), flops);
      EXPECT_GT(r.at("rates").at("flop_per_s").get<double>(), 0);
    } else if (name == "pad_pack") {
      EXPECT_EQ(role, "part");
    } else {
      // A collective: bytes moved and the bus factor of its group, (n - 1) / n.
      EXPECT_EQ(role, "communication");
      const double n = name == "kv_all_gather" ? p.at("allgather").get<double>() : p.at("ulysses").get<double>();
      EXPECT_DOUBLE_EQ(r.at("work").at("bus_factor").get<double>(), (n - 1) / n);
      EXPECT_GT(r.at("work").at("bytes").get<double>(), 0);
      EXPECT_GT(r.at("rates").at("busbw_bytes_per_s").get<double>(), 0);
    }
  }
  EXPECT_EQ(totals.size(), 3u);
  for (const auto& [g, n] : totals) EXPECT_EQ(n, 1) << g;

  // Every case carries its forwards timed round-robin with the others' (4 iterations, 2 runs);
  // every case after the first its forward against the first one's, the median of the
  // per-iteration ratios of those samples, with an interval and each run's ratio.
  int compared = 0;
  std::map<std::string, std::vector<double>> forwards;
  for (const auto& c : doc.at("topologies")) {
    const auto& runs = c.at("interleaved_forward_ms");
    ASSERT_EQ(runs.size(), 2u) << c.dump();
    ASSERT_EQ(runs[0].size(), 4u) << c.dump();
    forwards[c.at("topology")] = runs[0].get<std::vector<double>>();
    if (c.at("topology") == "usp4+uaa") continue;
    ASSERT_TRUE(c.contains("total_vs_first")) << c.dump();
    EXPECT_EQ(c["total_vs_first"].at("ci").size(), 2u);
    EXPECT_EQ(c["total_vs_first"].at("repeats").size(), 2u);
    ++compared;
  }
  EXPECT_EQ(compared, 2);
  for (const auto& c : doc.at("topologies")) {
    if (c.at("topology") == "usp4+uaa") continue;
    std::vector<double> r;
    const auto& mine = forwards[c.at("topology")];
    for (std::size_t i = 0; i < mine.size(); ++i) r.push_back(mine[i] / forwards["usp4+uaa"][i]);
    std::sort(r.begin(), r.end());
    EXPECT_NEAR(c["total_vs_first"].at("value").get<double>(), 0.5 * (r[1] + r[2]), 1e-9 * r[2]) << c.dump();
  }

  const auto text = slurp(md);
  for (const auto& [g, n] : totals) EXPECT_NE(text.find("#### " + g), std::string::npos) << g << "\n" << text;
  EXPECT_NE(text.find("vs usp4+uaa (paired per-iteration ratio)"), std::string::npos) << text;
  EXPECT_NE(text.find("timed round-robin"), std::string::npos) << text;
  EXPECT_NE(text.find("other / unaccounted"), std::string::npos) << text;
}
