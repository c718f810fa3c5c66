// Pure parts of layerbench-coll: size parsing and stepping, bandwidth factors, plan validation.
#include "bench/coll/sweep.hpp"
#include "collectives/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <fstream>

using namespace layerbench;
using namespace layerbench::coll;

TEST(CollOps, ParseSize) {
  EXPECT_EQ(parse_size("8"), 8u);
  EXPECT_EQ(parse_size("1K"), 1024u);
  EXPECT_EQ(parse_size("64M"), 64u << 20);
  EXPECT_EQ(parse_size("1G"), 1u << 30);
  EXPECT_EQ(parse_size("2kb"), 2048u);
  EXPECT_THROW(parse_size(""), UsageError);
  EXPECT_THROW(parse_size("12Q"), UsageError);
  EXPECT_THROW(parse_size("abc"), UsageError);
  EXPECT_THROW(parse_size("-4"), UsageError);
}

TEST(CollOps, SizeStepsLikeNcclTests) {
  EXPECT_EQ(size_steps(8, 64, 2, 0), (std::vector<std::uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(size_steps(1024, 4096, 4, 0), (std::vector<std::uint64_t>{1024, 4096}));
  EXPECT_EQ(size_steps(100, 350, 2, 100), (std::vector<std::uint64_t>{100, 200, 300}));
}

TEST(CollOps, BusBandwidthFactors) {
  // collectives.md section 2: all_reduce 2(n-1)/n; gather/scatter/alltoall (n-1)/n; bcast, sendrecv 1.
  EXPECT_DOUBLE_EQ(busbw_factor(Op::all_reduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busbw_factor(Op::all_gather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busbw_factor(Op::reduce_scatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor(Op::all_to_all, 2), 0.5);
  EXPECT_DOUBLE_EQ(busbw_factor(Op::all_to_allv, 2), 0.5);
  EXPECT_DOUBLE_EQ(busbw_factor(Op::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(Op::sendrecv, 8), 1.0);
}

TEST(CollOps, PlanRejectsBadInput) {
  auto bad = [](auto tweak) {
    Config c;
    tweak(c);
    EXPECT_THROW(make_plan(c), UsageError);
  };
  bad([](Config& c) { c.ops = {"all_gather", "bogus"}; });
  bad([](Config& c) { c.min_bytes = "1M"; c.max_bytes = "1K"; });
  bad([](Config& c) { c.step_factor = 1.0; });
  bad([](Config& c) { c.dtype = "fp8"; });
  bad([](Config& c) { c.places = "sideways"; });
  bad([](Config& c) { c.grid = "2y2"; });
  bad([](Config& c) { c.group = "ulysses"; });  // needs --grid
  bad([](Config& c) { c.imbalance = 0.5; });
  bad([](Config& c) { c.inject_fault = "1:explode"; });
  bad([](Config& c) { c.matrix = "/nonexistent/matrix.txt"; });

  Config ok;
  ok.ops = {"all_reduce", "scalar_exchange"};
  ok.min_bytes = "1K";
  ok.max_bytes = "16K";
  ok.step_factor = 4;
  ok.grid = "2x2";
  ok.group = "allgather";
  const auto p = make_plan(ok);
  EXPECT_EQ(p.op_list, (std::vector<Op>{Op::all_reduce, Op::scalar_exchange}));
  EXPECT_EQ(p.sizes, (std::vector<std::uint64_t>{1024, 4096, 16384}));
  EXPECT_EQ(p.grid_u, 2);
  EXPECT_EQ(p.grid_a, 2);
}

TEST(CollOps, MatrixFileMustBeSquare) {
  const std::string path = ::testing::TempDir() + "lb_matrix.txt";
  {
    std::ofstream(path) << "0 8 16\n8 0\n";
  }
  Config c;
  c.ops = {"all_to_allv"};
  c.matrix = path;
  EXPECT_THROW(make_plan(c), UsageError);
  {
    std::ofstream(path) << "0, 8\n16, 0\n";
  }
  const auto p = make_plan(c);
  ASSERT_EQ(p.matrix_bytes.size(), 2u);
  EXPECT_EQ(p.matrix_bytes[1][0], 16u);
  std::remove(path.c_str());
}

TEST(CollTable, NumbersKeepTheirColumnWidthAtAnyMagnitude) {
  for (const double v : {0.0, 0.5, 12.34, 99999.99, 123456.789, 1234567.0, 98765432.1, 1.5e12, 7.25e300}) {
    const auto s = fit_number(v, 10);
    EXPECT_EQ(s.size(), 10u) << v << " -> '" << s << "'";
    EXPECT_NEAR(std::stod(s), v, std::abs(v) * 1e-3 + 0.01) << s;
  }
  EXPECT_EQ(fit_number(123456.789, 10), " 123456.79");
  EXPECT_EQ(fit_number(12345678.9, 10), "12345678.9");
}

TEST(CollTable, RowsLineUpForLongTimesAndTheFooterAveragesBusBandwidth) {
  Config c;
  const TablePrinter t(c);
  auto meas = [](std::uint64_t bytes, bool in_place, double time_us, double busbw) {
    reports::Measurement m;
    m.name = "all_gather";
    m.params = {{"bytes", bytes}, {"dtype", "bf16"}, {"in_place", in_place}};
    // Declared work that gives `busbw` GB/s at `time_us` (rates_of derives the table's figures).
    m.samples_ms = {time_us * 1e-3};
    m.role = reports::Role::probe;
    m.work.bus_factor = 0.5;
    m.work.bytes = busbw * 1e9 * time_us * 1e-6 / m.work.bus_factor;
    m.metrics = {{"time_us", time_us}, {"agg_time_us", time_us}, {"wrong", 0.0}};
    return m;
  };
  SweepResult r;
  r.results = {meas(8, false, 1.5, 1), meas(8, true, 1.25, 2), meas(1ull << 34, false, 123456789.0, 3),
               meas(1ull << 34, true, 250000.0, 6)};
  const auto small = t.rows(std::span(r.results).first(2));
  const auto large = t.rows(std::span(r.results).subspan(2));
  ASSERT_EQ(std::count(small.begin(), small.end(), '\n'), 1);
  ASSERT_EQ(std::count(large.begin(), large.end(), '\n'), 1);
  // Every '|' separator sits at the same column in both rows and in the header.
  auto bars = [](const std::string& line) {
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < line.size(); ++i)
      if (line[i] == '|') at.push_back(i);
    return at;
  };
  const auto header = t.header();
  const auto header_cols = header.substr(header.find('\n') + 1);
  EXPECT_EQ(bars(small), bars(large));
  EXPECT_EQ(bars(small), bars(header_cols));
  EXPECT_EQ(small.size(), large.size());
  const auto footer = t.footer(r);
  EXPECT_NE(footer.find("# Avg bus bandwidth    : 3"), std::string::npos) << footer;
  EXPECT_NE(footer.find("out of bounds values : 0 OK"), std::string::npos) << footer;
}

TEST(CollSweep, StepsAreOnePerOpAndSize) {
  Config c;
  c.ops = {"all_gather", "scalar_exchange"};
  c.min_bytes = "8";
  c.max_bytes = "64";
  const auto steps = sweep_steps(make_plan(c));
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0].size, 8u);
  EXPECT_EQ(steps[3].size, 64u);
  EXPECT_EQ(steps[4].op, Op::scalar_exchange);
}
