// Pure parts of layerbench-coll: size parsing and stepping, bandwidth factors, plan validation.
#include "bench/coll/sweep.hpp"
#include "collectives/error.hpp"

#include <gtest/gtest.h>

#include <cstdio>
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
