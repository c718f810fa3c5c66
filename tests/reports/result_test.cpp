#include "reports/prediction.hpp"
#include "reports/result.hpp"

#include <gtest/gtest.h>

namespace lr = layerbench::reports;

TEST(Result, RoundTripAndSummary) {
  lr::Measurement m;
  m.name = "all_gather";
  m.params = {{"bytes", 1024}};
  m.samples_ms = {3.0, 1.0, 2.0};
  const auto j = lr::to_json(m);
  EXPECT_DOUBLE_EQ(j.at("median_ms").get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j.at("min_ms").get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j.at("max_ms").get<double>(), 3.0);
  const auto back = lr::measurement_from_json(j);
  EXPECT_EQ(back.name, "all_gather");
  EXPECT_EQ(back.samples_ms, m.samples_ms);
  EXPECT_THROW(lr::measurement_from_json(nlohmann::json::object()), std::runtime_error);
}

// Energy in the contract: declared in J, per instance and mean watts derived, read back; absent
// (no counter) is null, never zero. The reference's paired samples travel with the measurement.
TEST(Result, EnergyAndPairedReferenceRoundTrip) {
  lr::Measurement m;
  m.name = "stack";
  m.instances = 4;
  m.samples_ms = {10.0, 11.0};
  EXPECT_TRUE(lr::to_json(m).at("energy").is_null());
  EXPECT_FALSE(lr::measurement_from_json(lr::to_json(m)).energy.present());
  m.energy = {.joules = 80.0, .seconds = 0.5, .calls = 2, .devices = 2};
  m.reference = "dense_gemm_reference";
  m.reference_samples_ms = {1.0, 1.1};
  const auto j = lr::to_json(m);
  EXPECT_EQ(j["energy"]["unit"], "J");
  EXPECT_DOUBLE_EQ(j["energy"]["per_instance_j"].get<double>(), 10.0);  // 80 J / 2 calls / 4 instances
  EXPECT_DOUBLE_EQ(j["energy"]["mean_w_per_device"].get<double>(), 80.0);  // 80 J / 0.5 s / 2 devices
  const auto back = lr::measurement_from_json(j);
  EXPECT_DOUBLE_EQ(back.energy.joules, 80.0);
  EXPECT_EQ(back.energy.devices, 2);
  EXPECT_EQ(back.reference, "dense_gemm_reference");
  EXPECT_EQ(back.reference_samples_ms, m.reference_samples_ms);
  auto bad = j;
  bad["energy"]["unit"] = "kWh";
  EXPECT_THROW(lr::measurement_from_json(bad), std::runtime_error);
}

// Params print as k=v with numbers shortest (a declared 0.0 reads 0, never 0.000).
TEST(Result, ParamsText) {
  EXPECT_EQ(lr::params_text({{"shape", "a b"}, {"work", 0.0}, {"n", 3}, {"x", 2.5}}), "n=3;shape=a b;work=0;x=2.5");
  EXPECT_EQ(lr::params_text(nlohmann::json::object()), "");
}

// An advisor's prediction in a result file: written once (to_json), read back by the report with
// its parts in the layer's order; files of 2026-12-03 (parts by name, "layout") still read.
TEST(Prediction, JsonRoundTripAndOlderFiles) {
  lr::Prediction p;
  p.label = "ep8";
  p.total = {2.0, 1.8, 2.3};
  p.parts = {{"router", {0.1, 0.09, 0.11}}, {"ep_dispatch", {0.5, 0.4, 0.6}}};
  p.notes = {"router: timed here"};
  auto j = lr::to_json(p);
  j["layout"] = "ep8";
  const auto back = lr::prediction_from_json(j);
  EXPECT_EQ(back.label, "ep8");
  EXPECT_DOUBLE_EQ(back.total.hi, 2.3);
  ASSERT_EQ(back.parts.size(), 2u);
  EXPECT_EQ(back.parts[0].first, "router");
  EXPECT_DOUBLE_EQ(back.parts[1].second.lo, 0.4);
  EXPECT_EQ(back.notes, p.notes);
  const nlohmann::json old = {{"layout", "tp2"}, {"predicted_ms", 1.0}, {"lo_ms", 0.9}, {"hi_ms", 1.1},
                              {"parts", {{"x", {{"median_ms", 1.0}, {"lo_ms", 0.9}, {"hi_ms", 1.1}}}}}};
  EXPECT_EQ(lr::prediction_from_json(old).label, "tp2");
  EXPECT_EQ(lr::prediction_from_json(old).parts.size(), 1u);
  EXPECT_THROW(lr::prediction_from_json({{"layout", "x"}}), std::runtime_error);
  EXPECT_THROW(lr::prediction_from_json({{"predicted_ms", 1.0}, {"lo_ms", 1.0}, {"hi_ms", 1.0}}), std::runtime_error);
}

// A tie with the fastest reads as a signed zero-free figure, never "+0.0%".
TEST(Prediction, AdviceSectionTie) {
  lr::Prediction a{"a", {1.0, 0.9, 1.1}, {}, {}}, b{"b", {1.0, 0.9, 1.1}, {}, {}};
  const auto md = lr::to_markdown(lr::advice_section("t", {a, b}, "layout"), 2);
  EXPECT_EQ(md.find("+0.0%"), std::string::npos) << md;
}
