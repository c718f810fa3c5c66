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
