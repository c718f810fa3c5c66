#pragma once
// Test support: run an MPI binary of the project on the host backend and check that the
// measurements of its layerbench JSON follow the measurement contract (a role, declared work,
// and the rates the file carries are reports::rates_of's).
#include "reports/result.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace layerbench::test_support {

// The path in environment variable `name`; the test is skipped without it.
inline std::string env_path(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

struct RunOutput {
  int status = -1;
  std::string text;  // stdout
};

// `mpiexec -np N --oversubscribe binary args...`, stdout captured (stderr passes through).
inline RunOutput run_mpi(const std::string& mpiexec, int ranks, const std::string& binary, const std::string& args) {
  const std::string cmd = mpiexec + " -np " + std::to_string(ranks) + " --oversubscribe " + binary + " " + args;
  RunOutput out;
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p)) out.text += buf.data();
  out.status = pclose(p);
  return out;
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

inline bool same_rate(const nlohmann::json& stored, double derived) {
  if (!std::isfinite(derived)) return stored.is_null();
  return stored.is_number() && std::abs(stored.get<double>() - derived) <= 1e-9 * std::abs(derived);
}

// Every result declares a role; one with work carries the rates rates_of derives from it.
inline void expect_rates_follow_work(const nlohmann::json& doc) {
  ASSERT_EQ(doc.at("schema"), reports::kSchema);
  ASSERT_FALSE(doc.at("results").empty());
  for (const auto& r : doc.at("results")) {
    SCOPED_TRACE(r.value("group", std::string()) + " " + r.at("name").get<std::string>());
    ASSERT_TRUE(r.contains("role"));
    EXPECT_NO_THROW((void)reports::parse_role(r.at("role").get<std::string>()));
    const auto m = reports::measurement_from_json(r);
    if (m.work.empty()) {
      EXPECT_FALSE(r.contains("rates"));
      continue;
    }
    ASSERT_TRUE(r.contains("rates"));
    const auto want = reports::rates_of(m);
    const auto& got = r.at("rates");
    EXPECT_TRUE(same_rate(got.at("flop_per_s"), want.flop_per_s)) << got.dump();
    EXPECT_TRUE(same_rate(got.at("algbw_bytes_per_s"), want.algbw_bytes_per_s)) << got.dump();
    EXPECT_TRUE(same_rate(got.at("busbw_bytes_per_s"), want.busbw_bytes_per_s)) << got.dump();
  }
}

}  // namespace layerbench::test_support
