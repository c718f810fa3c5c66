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
