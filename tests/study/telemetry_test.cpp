// The per-arm telemetry comparison of an A/B study: clock test, warnings, clock-normalised
// delta; and the per-run records read back from a study file.
#include "study/telemetry.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "study/study.hpp"

namespace layerbench::ab {
namespace {

RunCovariates run(double clock, double capped, double mem = 1000) {
  RunCovariates r;
  r.samples = 10;
  r.sm_clock_mhz = clock;
  r.power_w = 600;
  r.power_capped_share = capped;
  r.memory_peak_mib = mem;
  return r;
}

stats::PairedOptions options() {
  stats::PairedOptions o;
  o.resamples = 2000;
  return o;
}

TEST(AbTelemetry, ClockDifferenceWarnsAndNormalisationRemovesIt) {
  // The same work (1.8e6 cycles) at two clocks: the candidate is slower only because its clock is lower.
  std::vector<RunCovariates> b, c;
  std::vector<double> vb, vc;
  for (int i = 0; i < 20; ++i) {
    const double cb = 1800 + (i % 3), cc = 1700 + (i % 4);
    b.push_back(run(cb, 0.9, 1000 + i));
    c.push_back(run(cc, 0.95));
    vb.push_back(1.8e6 / cb);
    vc.push_back(1.8e6 / cc);
  }
  const auto t = compare_telemetry(b, c, vb, vc, options());
  ASSERT_TRUE(t.present);
  EXPECT_NEAR(t.base.sm_clock_mean_mhz, 1801, 0.1);
  EXPECT_DOUBLE_EQ(t.base.memory_peak_mib, 1019);
  ASSERT_TRUE(t.clock_diff);
  EXPECT_LT(t.clock_diff->mean, -95);  // candidate - base: the candidate's clock is lower
  EXPECT_LT(t.clock_diff->p, 1e-6);
  ASSERT_TRUE(t.normalised);
  EXPECT_GT(t.raw_delta_mean, 50);                        // raw: the candidate looks ~58 units slower
  EXPECT_NEAR(t.normalised->delta.mean, 0.0, 1e-9);       // at one clock the work is the same
  ASSERT_EQ(t.warnings.size(), 2u);
  EXPECT_NE(t.warnings[0].find("different SM clocks"), std::string::npos);
  EXPECT_NE(t.warnings[1].find("power-capped"), std::string::npos);
  const auto j = telemetry_json(t);
  EXPECT_EQ(j["clock_normalised_delta"]["pairs"], 20);
  const auto section = telemetry_section(t, "s");
  ASSERT_EQ(section.tables.size(), 1u);
  EXPECT_EQ(section.tables[0].rows.size(), 2u);  // base, candidate
  EXPECT_NE(layerbench::reports::to_text(section).find("clock-normalised"), std::string::npos);
  EXPECT_NE(layerbench::reports::to_markdown(section, 0).find("| base |"), std::string::npos);
}

TEST(AbTelemetry, EqualClocksNoWarnings) {
  std::vector<RunCovariates> b, c;
  std::vector<double> vb, vc;
  for (int i = 0; i < 12; ++i) {
    b.push_back(run(1980 - (i % 2), 0.0));
    c.push_back(run(1980 - ((i + 1) % 2), 0.0));
    vb.push_back(10 + 0.01 * i);
    vc.push_back(9 + 0.01 * i);
  }
  const auto t = compare_telemetry(b, c, vb, vc, options());
  EXPECT_TRUE(t.warnings.empty());
  ASSERT_TRUE(t.normalised);
  EXPECT_NEAR(t.normalised->delta.mean, -1.0, 0.01);  // candidate - base: 1 unit faster
}

TEST(AbTelemetry, NoSamplesIsNotPresent) {
  std::vector<RunCovariates> none(3);
  const std::vector<double> v = {1, 2, 3};
  auto t = compare_telemetry(none, none, v, v, options());
  EXPECT_FALSE(t.present);
  t.status = "unavailable: libnvidia-ml.so.1 not loadable";
  EXPECT_NE(layerbench::reports::to_text(telemetry_section(t)).find("unavailable"), std::string::npos);
}

TEST(AbTelemetry, CovariatesOfAWindowRecord) {
  const nlohmann::json w = {{"samples", 7},
                            {"combined", {{"sm_clock_mean_mhz", 1770.5}, {"power_mean_w", 654.0},
                                          {"power_capped_share", 0.97}, {"memory_used_peak_mib", nullptr}}}};
  const auto r = covariates_of(w);
  EXPECT_EQ(r.samples, 7u);
  EXPECT_DOUBLE_EQ(r.sm_clock_mhz, 1770.5);
  EXPECT_DOUBLE_EQ(r.power_capped_share, 0.97);
  EXPECT_TRUE(std::isnan(r.memory_peak_mib));
  EXPECT_EQ(covariates_of(nullptr).samples, 0u);
}

TEST(AbTelemetry, RunRecordsKeepTheirTelemetry) {
  RunRecord r;
  r.arm = "base";
  r.status = "ok";
  r.metric = 1.0;
  r.telemetry = {{"samples", 3}, {"combined", {{"sm_clock_mean_mhz", 1500.0}}}};
  const auto j = run_json(r);
  EXPECT_EQ(j.at("telemetry").at("samples"), 3);
  RunRecord plain;
  EXPECT_FALSE(run_json(plain).contains("telemetry"));
}

}  // namespace
}  // namespace layerbench::ab
