// layerbench-coll on 4 host ranks follows the measurement contract: every measurement is a
// probe with nccl-tests' size and bus factor declared, the JSON's rates are rates_of's, and the
// busbw the table prints (and its "Avg bus bandwidth") is rates_of's busbw.
#include "bench/coll/sweep.hpp"
#include "reports/result.hpp"
#include "stats/summary.hpp"
#include "tests/bench/support/contract_check.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <sstream>

using namespace layerbench;

namespace {

struct Run {
  nlohmann::json doc;
  std::string text;
};

const Run& sweep() {
  static const Run run = [] {
    Run r;
    const auto mpiexec = test_support::env_path("LB_MPIEXEC"), bin = test_support::env_path("LB_COLL");
    const std::string json = ::testing::TempDir() + "lb_coll_contract.json";
    const auto out = test_support::run_mpi(mpiexec, 4, bin,
                                      "--backend host --ops all_gather,all_reduce,all_to_all,broadcast,scalar_exchange "
                                      "-b 1K -e 64K -f 8 --warmup 1 --iterations 5 --json " + json);
    EXPECT_EQ(out.status, 0) << out.text;
    r.text = out.text;
    r.doc = test_support::read_json(json);
    return r;
  }();
  return run;
}

}  // namespace

TEST(CollContract, MeasurementsAreProbesWithNcclTestsWork) {
  const auto& doc = sweep().doc;
  test_support::expect_rates_follow_work(doc);
  const std::map<std::string, double> factor = {{"all_gather", 0.75}, {"all_reduce", 1.5}, {"all_to_all", 0.75},
                                                {"broadcast", 1.0}, {"scalar_exchange", 0.75},
                                                {"scalar_exchange_device", 0.75}};
  for (const auto& r : doc.at("results")) {
    SCOPED_TRACE(r.dump().substr(0, 200));
    EXPECT_EQ(r.at("role"), "probe");
    const double bytes = r.at("params").at("bytes").get<double>();
    EXPECT_EQ(r.at("work").at("bytes").get<double>(), bytes);
    EXPECT_DOUBLE_EQ(r.at("work").at("bus_factor").get<double>(), factor.at(r.at("name").get<std::string>()));
    // The definition, independently of rates_of: bytes over the median, times the factor.
    const double med_s = stats::summarize(r.at("samples_ms").get<std::vector<double>>()).median * 1e-3;
    EXPECT_NEAR(r.at("rates").at("busbw_bytes_per_s").get<double>(), bytes / med_s * factor.at(r.at("name")),
                1e-9 * bytes / med_s);
  }
}

// The busbw of the (op, size, place) cell in the streamed table; "" when there is no such row.
std::string printed_busbw(const std::string& text, const std::string& op, std::uint64_t bytes, bool in_place) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream head(line);
    std::string name, size;
    head >> name >> size;
    if (name != op || size != std::to_string(bytes)) continue;
    // "  op size type  | time algbw busbw #wrong agg | time algbw busbw #wrong agg"
    std::vector<std::string> cells;
    std::istringstream parts(line);
    for (std::string part; std::getline(parts, part, '|');) cells.push_back(part);
    if (cells.size() < 3) return {};
    std::istringstream cell(cells[in_place ? 2 : 1]);
    std::string time, algbw, busbw;
    cell >> time >> algbw >> busbw;
    return busbw;
  }
  return {};
}

TEST(CollContract, TableBusBandwidthIsRatesOf) {
  const auto& run = sweep();
  std::vector<reports::Measurement> ms;
  for (const auto& r : run.doc.at("results")) ms.push_back(reports::measurement_from_json(r));
  ASSERT_FALSE(ms.empty());
  for (const auto& m : ms) {
    const auto bytes = m.params.at("bytes").get<std::uint64_t>();
    const std::string want = coll::fit_number(reports::rates_of(m).busbw_bytes_per_s / 1e9, 8);
    EXPECT_EQ(printed_busbw(run.text, m.name, bytes, m.params.value("in_place", false)),
              want.substr(want.find_first_not_of(' ')))
        << m.name << " " << bytes << "\n" << run.text;
  }
  const std::string avg = fmt::format("# Avg bus bandwidth    : {:g}\n", coll::average_busbw(ms));
  EXPECT_NE(run.text.find(avg), std::string::npos) << avg << run.text;
  double sum = 0;
  for (const auto& m : ms) sum += reports::rates_of(m).busbw_bytes_per_s / 1e9;
  EXPECT_DOUBLE_EQ(coll::average_busbw(ms), sum / static_cast<double>(ms.size()));
}
