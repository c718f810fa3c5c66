// layerbench-ab analyze / plan end to end: output values, JSON keys, bad input -> exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/bench/ab/cli_test_util.hpp"

using namespace layerbench::ab::testing;
using nlohmann::json;

namespace {

// R's sleep data: base = group 1, candidate = group 2, so delta = statistics.md's sleep d.
const char* sleep_csv =
    "id,base,candidate,note\n"
    "1,0.7,1.9,a\n2,-1.6,0.8,b\n3,-0.2,1.1,c\n4,-1.2,0.1,d\n5,-0.1,-0.1,e\n"
    "6,3.4,4.4,f\n7,3.7,5.5,g\n8,0.8,1.6,h\n9,0.0,4.6,i\n10,2.0,3.4,j\n";

}  // namespace

TEST(AnalyzeCli, JsonHasEveryKeyAndTheOracleValues) {
  TempDir dir;
  const auto csv = dir.file("sleep.csv", sleep_csv);
  const auto r = run_ab({"analyze", csv.string(), "--json", "-", "--resamples", "20000", "--predicted", "1.5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json::parse(r.out);  // exactly one JSON object
  EXPECT_EQ(j.at("n"), 10);
  for (const char* k : {"mean", "median", "sd", "min", "max"}) {
    EXPECT_TRUE(j.at("base").contains(k)) << k;
    EXPECT_TRUE(j.at("candidate").contains(k)) << k;
  }
  for (const char* k : {"mean", "median", "trimmed_mean", "trim", "sd", "se", "mean_pct", "median_pct",
                        "trimmed_mean_pct"}) {
    EXPECT_TRUE(j.at("delta").contains(k)) << k;
  }
  EXPECT_NEAR(j["delta"]["mean"].get<double>(), 1.58, 1e-12);  // candidate - base
  EXPECT_NEAR(j["delta"]["sd"].get<double>(), 1.229995, 1e-6);
  EXPECT_NEAR(j["t_test"]["t"].get<double>(), 4.062128, 1e-6);
  EXPECT_DOUBLE_EQ(j["t_test"]["df"].get<double>(), 9);
  EXPECT_NEAR(j["t_test"]["p"].get<double>(), 0.002833, 1e-6);
  EXPECT_DOUBLE_EQ(j["t_ci"]["confidence"].get<double>(), 0.95);
  EXPECT_NEAR(j["t_ci"]["low"].get<double>(), 0.700114, 1e-6);
  EXPECT_NEAR(j["t_ci"]["high"].get<double>(), 2.459886, 1e-6);
  const auto& b = j.at("bootstrap");
  EXPECT_EQ(b.at("resamples"), 20000);
  EXPECT_TRUE(b.contains("seed"));
  for (const char* k : {"percentile", "bca", "median_percentile"}) {
    EXPECT_LT(b.at(k).at("low").get<double>(), b.at(k).at("high").get<double>()) << k;
  }
  const auto& w = j.at("wilcoxon");
  EXPECT_DOUBLE_EQ(w.at("w_minus").get<double>(), 0.0);  // every non-zero delta is positive
  EXPECT_DOUBLE_EQ(w.at("w_plus").get<double>(), 45.0);
  EXPECT_EQ(w.at("n_nonzero"), 9);
  EXPECT_GT(w.at("z").get<double>(), 0.0);
  EXPECT_TRUE(w.contains("p_normal"));
  EXPECT_DOUBLE_EQ(w.at("p_exact").get<double>(), 2.0 / 512.0);  // oracle 13b
  const auto& s = j.at("sign_test");
  EXPECT_EQ(s.at("positive"), 9);
  EXPECT_EQ(s.at("negative"), 0);
  EXPECT_EQ(s.at("n"), 9);
  EXPECT_DOUBLE_EQ(s.at("p").get<double>(), 2.0 / 512.0);
  ASSERT_TRUE(j.at("outliers").is_array());
  // q1 1.05, q3 1.7: the zero (row 4) is below q1 - 1.5 IQR, 4.6 (row 8) above q3 + 3 IQR.
  ASSERT_EQ(j["outliers"].size(), 2u);
  EXPECT_EQ(j["outliers"][0]["index"], 4);
  EXPECT_EQ(j["outliers"][0]["kind"], "low");
  EXPECT_EQ(j["outliers"][0]["severity"], "mild");
  EXPECT_EQ(j["outliers"][1]["index"], 8);
  EXPECT_EQ(j["outliers"][1]["kind"], "high");
  EXPECT_EQ(j["outliers"][1]["severity"], "severe");
  for (const char* k : {"base_rho", "base_p", "delta_rho", "delta_p"}) EXPECT_TRUE(j.at("drift").contains(k)) << k;
  EXPECT_NEAR(j["predicted"]["ratio_mean"].get<double>(), 1.58 / 1.5, 1e-12);
  EXPECT_TRUE(j["predicted"].contains("ratio_median"));
}

TEST(AnalyzeCli, PredictedIsNullWithoutFlagAndOptionsApply) {
  TempDir dir;
  const auto csv = dir.file("sleep.csv", sleep_csv);
  const auto r = run_ab({"analyze", csv.string(), "--json", "-", "--resamples", "5000", "--seed", "7", "--trim", "0.2",
                         "--confidence", "0.9", "--continuity", "--zero-method", "zsplit"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json::parse(r.out);
  EXPECT_TRUE(j.at("predicted").is_null());
  EXPECT_EQ(j["bootstrap"]["seed"], 7);
  EXPECT_DOUBLE_EQ(j["delta"]["trim"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(j["t_ci"]["confidence"].get<double>(), 0.9);
  EXPECT_EQ(j["wilcoxon"]["n_nonzero"], 9);
  EXPECT_EQ(j["wilcoxon"]["zero_method"], "zsplit");
}

TEST(AnalyzeCli, TextAndMarkdownTables) {
  TempDir dir;
  const auto csv = dir.file("sleep.csv", sleep_csv);
  const auto text = run_ab({"analyze", csv.string(), "--resamples", "5000"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* s : {"Arm", "Paired delta", "10% trimmed mean", "95% CI of the mean (t)", "Wilcoxon signed-rank",
                        "sign test", "Reading guidance"}) {
    EXPECT_NE(text.out.find(s), std::string::npos) << s;
  }
  const auto md = run_ab({"analyze", csv.string(), "--resamples", "5000", "--markdown", "-"});
  ASSERT_EQ(md.exit_code, 0);
  EXPECT_NE(md.out.find("| Arm | n | median | mean | sd | min | max |"), std::string::npos);
  EXPECT_NE(md.out.find("| Statistic | Value |"), std::string::npos);
}

TEST(AnalyzeCli, BadInputExitsTwoNamingFileAndLine) {
  TempDir dir;
  struct Case {
    std::string name, content, expect;
  };
  const std::vector<Case> cases{
      {"nocol.csv", "base,other\n1,2\n3,4\n", "nocol.csv:1: missing column 'candidate'"},
      {"text.csv", "base,candidate\n1,2\n3,abc\n", "text.csv:3: column 'candidate': 'abc' is not a number"},
      {"nan.csv", "base,candidate\n1,2\nnan,4\n", "nan.csv:3: column 'base': 'nan' is not finite"},
      {"inf.csv", "base,candidate\n1,2\n3,inf\n", "inf.csv:3: column 'candidate': 'inf' is not finite"},
      {"one.csv", "base,candidate\n1,2\n", "one.csv:2: 1 pair; need at least 2"},
      {"empty.csv", "", "empty.csv:1: empty file"},
      {"ragged.csv", "base,candidate\n1,2\n3,4,5\n", "ragged.csv:3: ragged row: 3 fields, the header has 2"},
  };
  for (const auto& c : cases) {
    const auto path = dir.file(c.name, c.content);
    const auto r = run_ab({"analyze", path.string()});
    EXPECT_EQ(r.exit_code, 2) << c.name;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.name << ": " << r.err;
  }
  const auto missing = run_ab({"analyze", (dir.path() / "absent.csv").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("absent.csv: no such file"), std::string::npos) << missing.err;

  const auto good = dir.file("good.csv", sleep_csv);
  const std::vector<std::pair<std::vector<std::string>, std::string>> flags{
      {{"--bogus"}, "bogus"},
      {{"--confidence", "1.5"}, "--confidence"},
      {{"--confidence", "0"}, "--confidence"},
      {{"--resamples", "999"}, "--resamples 999"},
      {{"--zero-method", "drop"}, "--zero-method"},
  };
  for (const auto& [extra, expect] : flags) {
    std::vector<std::string> args{"analyze", good.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_ab(args);
    EXPECT_EQ(r.exit_code, 2) << expect;
    EXPECT_NE(r.err.find(expect), std::string::npos) << r.err;
  }
  EXPECT_EQ(run_ab({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(run_ab({}).exit_code, 2);
}

TEST(AnalyzeCli, DegenerateDeltasWarnInsteadOfCrashing) {
  TempDir dir;
  const auto csv = dir.file("same.csv", "base,candidate\n2,1\n3,2\n4,3\n5,4\n");
  const auto r = run_ab({"analyze", csv.string(), "--json", "-", "--resamples", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json::parse(r.out);
  EXPECT_TRUE(j["bootstrap"]["percentile"]["low"].is_null());
  EXPECT_TRUE(j["bootstrap"]["bca"]["high"].is_null());
  EXPECT_FALSE(j["warnings"].empty());
}

TEST(PlanCli, OracleAndFloor) {
  const auto r = run_ab({"plan", "--sd", "1", "--effect", "1", "--json", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json::parse(r.out);
  EXPECT_NEAR(j["n_normal"].get<double>(), 7.848880, 1e-6);
  EXPECT_NEAR(j["n_t"].get<double>(), 9.917, 1e-3);
  EXPECT_NEAR(j["n_exact"].get<double>(), 9.937864, 1e-6);
  EXPECT_EQ(j["recommended"], 10);
  const auto big = json::parse(run_ab({"plan", "--sd", "0.1", "--effect", "5", "--json", "-"}).out);
  EXPECT_EQ(big["recommended"], 6);
  const auto text = run_ab({"plan", "--sd", "2", "--effect", "1", "--alpha", "0.05", "--power", "0.8"});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("recommended"), std::string::npos);
  EXPECT_EQ(run_ab({"plan", "--sd", "1"}).exit_code, 2);
  EXPECT_EQ(run_ab({"plan", "--sd", "1", "--effect", "0"}).exit_code, 2);
  EXPECT_EQ(run_ab({"plan", "--sd", "1", "--effect", "1", "--power", "1.2"}).exit_code, 2);
}

TEST(PlanCli, FromPilot) {
  TempDir dir;
  const auto pilot = dir.file("pilot.csv", "base,candidate\n10,9\n10,8\n10,9.5\n");
  const auto r = run_ab({"plan", "--pilot", pilot.string(), "--json", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json::parse(r.out);
  EXPECT_NEAR(j["effect"].get<double>(), -1.1666666666666667, 1e-12);  // observed mean (candidate - base)
  EXPECT_NEAR(j["sd"].get<double>(), 0.7637626158259734, 1e-12);
  EXPECT_GE(j["recommended"].get<int>(), 6);
  const auto fixed = json::parse(run_ab({"plan", "--pilot", pilot.string(), "--effect", "0.5", "--json", "-"}).out);
  EXPECT_DOUBLE_EQ(fixed["effect"].get<double>(), 0.5);
  // A percentage is of the pilot's base mean (10): 3% = 0.3.
  const auto pct = json::parse(run_ab({"plan", "--pilot", pilot.string(), "--effect", "3%", "--json", "-"}).out);
  EXPECT_NEAR(pct["effect"].get<double>(), 0.3, 1e-12);
}

TEST(PlanCli, PercentagesAreAccepted) {
  // Effect and sd both as percentages: only their ratio matters, as with the same figures in a unit.
  const auto pct = run_ab({"plan", "--sd", "1%", "--effect", "3%", "--json", "-"});
  ASSERT_EQ(pct.exit_code, 0) << pct.err;
  const auto unit = run_ab({"plan", "--sd", "1", "--effect", "3", "--json", "-"});
  EXPECT_EQ(json::parse(pct.out)["recommended"], json::parse(unit.out)["recommended"]);
  EXPECT_NE(run_ab({"plan", "--sd", "1%", "--effect", "3%"}).out.find("delta of 3%"), std::string::npos);
  const auto mixed = run_ab({"plan", "--sd", "0.01", "--effect", "3%"});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find("both as percentages"), std::string::npos) << mixed.err;
  EXPECT_EQ(run_ab({"plan", "--sd", "1%", "--effect", "three"}).exit_code, 2);
}
