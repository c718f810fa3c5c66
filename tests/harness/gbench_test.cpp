// Google Benchmark output: names, the time unit, the flag checks, the per-sample counters, and
// one in-process report (repetitions, Google Benchmark's aggregates, cpu_time, context).
#include "harness/gbench.hpp"

#include "common/usage.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

using namespace layerbench;
using namespace layerbench::harness;

namespace {

reports::Measurement coll_measurement(std::vector<double> samples_ms) {
  reports::Measurement m;
  m.name = "all_gather";
  m.group = "world";
  m.params = {{"op", "all_gather"}, {"bytes", 1024}, {"in_place", false}};
  m.samples_ms = std::move(samples_ms);
  return m;
}

std::string temp_path(const std::string& leaf) {
  return (std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "-" + leaf)).string();
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST(GbenchName, OnePerOpSizeAndPlacementWithoutRepeatingTheOp) {
  const auto m = coll_measurement({});
  EXPECT_EQ(gbench_name("layerbench-coll", m), "layerbench-coll/all_gather/world/bytes:1024/in_place:false");
  EXPECT_EQ(gbench_run_name("layerbench-coll", m, 20),
            "layerbench-coll/all_gather/world/bytes:1024/in_place:false/iterations:1/repeats:20/manual_time");
  auto other = m;
  other.params["in_place"] = true;
  EXPECT_NE(gbench_name("b", m), gbench_name("b", other));
  other.params["op"] = "reduce_scatter";  // an op param that differs from the name stays
  EXPECT_NE(gbench_name("b", other).find("op:reduce_scatter"), std::string::npos);
}

TEST(GbenchUnit, LargestUnitInWhichTheMedianIsAtLeastOne) {
  EXPECT_EQ(auto_time_unit(2500), GbTimeUnit::s);
  EXPECT_EQ(auto_time_unit(1000), GbTimeUnit::s);
  EXPECT_EQ(auto_time_unit(999), GbTimeUnit::ms);
  EXPECT_EQ(auto_time_unit(1), GbTimeUnit::ms);
  EXPECT_EQ(auto_time_unit(0.0123), GbTimeUnit::us);
  EXPECT_EQ(auto_time_unit(0.001), GbTimeUnit::us);
  EXPECT_EQ(auto_time_unit(0.0005), GbTimeUnit::ns);
  EXPECT_EQ(auto_time_unit(1e-9), GbTimeUnit::ns);
}

TEST(GbenchFlags, SplitOffAndParsed) {
  const auto [gb, rest] = split_gbench_args({"bin", "--iterations", "3", "--benchmark_format=json", "-b", "8"});
  EXPECT_EQ(gb, (std::vector<std::string>{"--benchmark_format=json"}));
  EXPECT_EQ(rest, (std::vector<std::string>{"bin", "--iterations", "3", "-b", "8"}));
  const auto o = parse_gbench_flags({"--benchmark_format=json", "--benchmark_out=x.json", "--benchmark_time_unit=us",
                                     "--benchmark_list_tests", "--benchmark_report_aggregates_only=true"});
  EXPECT_TRUE(o.active());
  EXPECT_TRUE(o.takes_stdout());
  EXPECT_TRUE(o.list_tests);
  EXPECT_EQ(o.out, "x.json");
  ASSERT_TRUE(o.time_unit.has_value());
  EXPECT_EQ(*o.time_unit, GbTimeUnit::us);
  EXPECT_FALSE(parse_gbench_flags({}).active());
  EXPECT_FALSE(parse_gbench_flags({"--benchmark_out=x.json"}).takes_stdout());  // console display
}

TEST(GbenchFlags, FilterSelectsAsGoogleBenchmarkDoes) {
  const auto pos = parse_gbench_flags({"--benchmark_filter=all_gather.*in_place:true"});
  EXPECT_TRUE(pos.selects("c/all_gather/world/bytes:8/in_place:true/iterations:1/repeats:2/manual_time"));
  EXPECT_FALSE(pos.selects("c/all_gather/world/bytes:8/in_place:false/iterations:1/repeats:2/manual_time"));
  const auto neg = parse_gbench_flags({"--benchmark_filter=-all_to_all"});
  EXPECT_TRUE(neg.selects("c/all_gather/x"));
  EXPECT_FALSE(neg.selects("c/all_to_all/x"));
  EXPECT_TRUE(parse_gbench_flags({"--benchmark_filter=all"}).selects("anything"));
  EXPECT_TRUE(parse_gbench_flags({"--benchmark_filter="}).selects("anything"));
  EXPECT_TRUE(parse_gbench_flags({}).selects("anything"));
}

TEST(GbenchFlags, BadFlagsAndValuesAreUsageErrors) {
  for (const char* bad : {"--benchmark_format=bogus", "--benchmark_out_format=xml", "--benchmark_repetitions=-1",
                          "--benchmark_repetitions=5", "--benchmark_min_time=1", "--benchmark_perf_counters=CYCLES",
                          "--benchmark_filter=([", "--benchmark_time_unit=parsec", "--benchmark_bogus",
                          "--benchmark_format", "--benchmark_list_tests=maybe", "--benchmark_out=",
                          "--benchmark_out=-", "--benchmark_context=novalue", "--benchmark_color=purple"})
    EXPECT_THROW(parse_gbench_flags({bad}), UsageError) << bad;
  try {
    parse_gbench_flags({"--benchmark_time_unit=parsec"});
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--benchmark_time_unit=parsec: expected one of ns, us, ms, s");
  }
  EXPECT_NO_THROW(parse_gbench_flags({"--benchmark_color=auto", "--benchmark_counters_tabular=true",
                                      "--benchmark_context=a=1,b=2", "--benchmark_display_aggregates_only=false"}));
}

TEST(GbenchCounters, PerSampleRatesFromTheDeclaredWork) {
  auto m = coll_measurement({0.5, 1.0});
  EXPECT_TRUE(gbench_counters(m, 1.0).empty());  // no declared work: no rate counter
  m.work = {0, 1e6, 0.75};
  std::map<std::string, double> c;
  for (const auto& [k, v] : gbench_counters(m, 0.5)) c[k] = v;
  ASSERT_EQ(c.size(), 3u);
  EXPECT_DOUBLE_EQ(c["bytes_per_second"], 2e9);  // 1e6 B in 0.5 ms
  EXPECT_DOUBLE_EQ(c["algbw"], 2e9);
  EXPECT_DOUBLE_EQ(c["busbw"], 1.5e9);
  m.work = {4e9, 0, 0};
  c.clear();
  for (const auto& [k, v] : gbench_counters(m, 2.0)) c[k] = v;
  ASSERT_EQ(c.size(), 1u);
  EXPECT_DOUBLE_EQ(c["FLOP/s"], 2e12);
}

// One process, two reports: Google Benchmark keeps its flags between Initialize calls, so the
// second report sets every flag the first one did.
TEST(GbenchReport, RepetitionsAggregatesUnitCpuTimeAndContext) {
  auto fast = coll_measurement({0.010, 0.012, 0.011, 0.013});  // µs-scale samples, in ms
  fast.work = {0, 1024, 0.5};
  auto slow = fast;
  slow.params["bytes"] = 1 << 20;
  slow.samples_ms = {2.0, 2.5, 3.0};
  slow.work = {};
  const GbenchContext ctx{"layerbench-test", "host", 2, {{"warmup", 1}, {"iterations", 4}}, 4};
  const std::string out = temp_path("gb.json");

  report_to_gbench(parse_gbench_flags({"--benchmark_out=" + out, "--benchmark_report_aggregates_only=false"}), ctx,
                   {fast, slow});
  const auto doc = read_json(out);
  EXPECT_EQ(doc["context"]["backend"], "host");
  EXPECT_EQ(doc["context"]["ranks"], "2");
  EXPECT_TRUE(doc["context"].contains("git_sha"));
  EXPECT_EQ(doc["context"]["timing_iterations"], "4");
  std::map<std::string, std::vector<nlohmann::json>> by_name;
  for (const auto& b : doc["benchmarks"]) by_name[b["run_name"].get<std::string>()].push_back(b);
  ASSERT_EQ(by_name.size(), 2u);
  const auto& f = by_name.at(gbench_run_name("layerbench-test", fast, 4));
  ASSERT_EQ(f.size(), 4u + 4u);  // the samples, then mean, median, stddev, cv
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(f[i]["run_type"], "iteration");
    EXPECT_EQ(f[i]["time_unit"], "us");
    EXPECT_NEAR(f[i]["real_time"].get<double>(), fast.samples_ms[i] * 1e3, 1e-9);
    EXPECT_DOUBLE_EQ(f[i]["cpu_time"].get<double>(), f[i]["real_time"].get<double>());
    EXPECT_NEAR(f[i]["busbw"].get<double>(), 1024 * 0.5 / (fast.samples_ms[i] * 1e-3), 1e-3);
  }
  std::vector<std::string> aggs;
  for (std::size_t i = 4; i < f.size(); ++i) {
    aggs.push_back(f[i]["aggregate_name"]);
    EXPECT_DOUBLE_EQ(f[i]["cpu_time"].get<double>(), f[i]["real_time"].get<double>());
  }
  EXPECT_EQ(aggs, (std::vector<std::string>{"mean", "median", "stddev", "cv"}));
  EXPECT_NEAR(f[4]["real_time"].get<double>(), 11.5, 1e-9);  // mean, in µs
  EXPECT_NEAR(f[5]["real_time"].get<double>(), 11.5, 1e-9);  // median
  const auto& s = by_name.at(gbench_run_name("layerbench-test", slow, 3));
  EXPECT_EQ(s[0]["time_unit"], "ms");
  EXPECT_FALSE(s[0].contains("busbw"));  // no declared work

  // Aggregates only, in the unit asked for.
  report_to_gbench(parse_gbench_flags({"--benchmark_out=" + out, "--benchmark_report_aggregates_only=true",
                                       "--benchmark_time_unit=ns", "--benchmark_filter=bytes:1024/"}),
                   ctx, {fast, slow});
  const auto agg = read_json(out);
  ASSERT_EQ(agg["benchmarks"].size(), 4u);  // the filter leaves the fast one
  for (const auto& b : agg["benchmarks"]) {
    EXPECT_EQ(b["run_type"], "aggregate");
    if (b["aggregate_name"] != "cv") {
      EXPECT_EQ(b["time_unit"], "ns");
    }
  }
  EXPECT_NEAR(agg["benchmarks"][1]["real_time"].get<double>(), 11500, 1e-6);
  std::remove(out.c_str());
}

TEST(GbenchReport, ListTestsPrintsTheNamesTheFilterSelects) {
  auto a = coll_measurement({});
  auto b = a;
  b.params["in_place"] = true;
  testing::internal::CaptureStdout();
  report_to_gbench(parse_gbench_flags({"--benchmark_list_tests=true", "--benchmark_filter=in_place:true"}),
                   {"layerbench-test", "host", 2, {}, 7}, {a, b});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(out, gbench_run_name("layerbench-test", b, 7) + "\n");
}
