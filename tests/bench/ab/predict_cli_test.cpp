// layerbench-ab's prediction check (--predicted X[+-E]) and --telemetry gpu end to end.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/bench/ab/cli_test_util.hpp"

using namespace layerbench::ab::testing;
using nlohmann::json;

namespace {

std::string csv_with_delta(double delta) {
  std::string csv = "base,candidate\n";
  for (int i = 0; i < 30; ++i) csv += std::to_string(10.0 + 0.01 * (i % 7)) + "," +
                                      std::to_string(10.0 - delta + 0.013 * (i % 5)) + "\n";
  return csv;
}

TEST(PredictCli, HoldsWithinItsUncertainty) {
  TempDir dir;
  const auto csv = dir.file("d.csv", csv_with_delta(1.0));
  const auto r = run_ab({"analyze", csv.string(), "--json", "-", "--resamples", "5000", "--predicted", "-0.9+-0.2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto p = json::parse(r.out).at("predicted");
  EXPECT_DOUBLE_EQ(p.at("value").get<double>(), -0.9);  // candidate - base: 1 faster
  EXPECT_DOUBLE_EQ(p.at("half_width").get<double>(), 0.2);
  EXPECT_TRUE(p.at("holds").get<bool>());
  const auto ci = p.at("difference_ci");
  EXPECT_LT(ci.at("low").get<double>(), 0.0);
  EXPECT_GT(ci.at("high").get<double>(), 0.0);
  EXPECT_FALSE(p.at("ratio_ci").is_null());
}

TEST(PredictCli, FailsWithoutIt) {
  TempDir dir;
  const auto csv = dir.file("d.csv", csv_with_delta(1.0));
  const auto r = run_ab({"analyze", csv.string(), "--resamples", "5000", "--predicted", "-0.9"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("prediction verdict"), std::string::npos);
  EXPECT_NE(r.out.find("fails"), std::string::npos);
  const auto u = run_ab({"analyze", csv.string(), "--resamples", "5000", "--predicted", "-0.9\u00b10.2"});
  ASSERT_EQ(u.exit_code, 0) << u.err;
  EXPECT_NE(u.out.find("holds"), std::string::npos);
}

TEST(PredictCli, BadPredictionsAreUsageErrors) {
  TempDir dir;
  const auto csv = dir.file("d.csv", csv_with_delta(1.0));
  for (const char* bad : {"abc", "1+-", "1+-x", "1+--2", "nan", "1+-inf"}) {
    const auto r = run_ab({"analyze", csv.string(), "--predicted", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--predicted"), std::string::npos) << bad << ": " << r.err;
  }
}

TEST(TelemetryCli, RecordsTheSamplerStateAndEveryRun) {
  TempDir dir;
  const auto out = dir.path() / "s.jsonl";
  const auto r = run_ab({"run", "--base", "sleep 0.05", "--candidate", "sleep 0.04", "--pairs", "3", "--telemetry",
                         "gpu", "--telemetry-period", "5", "--resamples", "2000", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = read_lines(out);
  const auto header = json::parse(lines.at(0));
  EXPECT_EQ(header.at("telemetry"), "gpu");
  const std::string status = header.at("telemetry_status").get<std::string>();
  ASSERT_FALSE(status.empty());
  const bool available = status.rfind("unavailable", 0) != 0;
  EXPECT_NE(r.out.find("GPU telemetry"), std::string::npos);
  std::size_t runs = 0;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto j = json::parse(lines[i]);
    if (j.at("type") != "run") continue;
    ++runs;
    EXPECT_EQ(j.contains("telemetry"), available) << lines[i];
    if (available) {
      EXPECT_GE(j.at("telemetry").at("samples").get<int>(), 1);
    }
  }
  EXPECT_EQ(runs, 6u);
  if (!available) {
    EXPECT_NE(r.err.find("--telemetry gpu"), std::string::npos);
  }
  const auto bad = run_ab({"run", "--base", "true", "--candidate", "true", "--pairs", "2", "--telemetry", "cpu",
                           "--out", (dir.path() / "b.jsonl").string()});
  EXPECT_EQ(bad.exit_code, 2);
}

}  // namespace
