#include "moe/expert_buckets.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

using layerbench::moe::expert_tile_count;
using layerbench::moe::ExpertTile;
using layerbench::moe::fill_expert_tiles;
using layerbench::moe::kExpertTileRows;
using layerbench::moe::plan_expert_buckets;

namespace {
// Every non-empty expert owns a slot of its bucket's capacity that holds all its rows; slots
// are disjoint and tile [0, rows); padding stays within a third of a bucket (+ rounding to 8).
void check_plan(const std::vector<int>& counts) {
  const auto p = plan_expert_buckets(counts);
  std::vector<std::pair<std::int64_t, std::int64_t>> slots;  // [begin, end)
  std::size_t covered = 0;
  for (const auto& b : p.buckets) {
    ASSERT_GT(b.count, 0u);
    ASSERT_EQ(b.cap % 8, 0);
    ASSERT_EQ(b.first, covered);
    for (std::size_t i = b.first; i < b.first + b.count; ++i) {
      const int e = p.order[i];
      ASSERT_GT(counts[static_cast<std::size_t>(e)], 0);
      ASSERT_GE(b.cap, counts[static_cast<std::size_t>(e)]);
      if (i > b.first) {
        ASSERT_GE(4 * counts[static_cast<std::size_t>(e)], 3 * b.cap);
      }
      slots.push_back({p.base[static_cast<std::size_t>(e)], p.base[static_cast<std::size_t>(e)] + b.cap});
    }
    covered += b.count;
  }
  const auto non_empty = static_cast<std::size_t>(std::count_if(counts.begin(), counts.end(), [](int c) { return c > 0; }));
  ASSERT_EQ(covered, non_empty);
  ASSERT_EQ(p.order.size(), non_empty);
  std::sort(slots.begin(), slots.end());
  std::int64_t at = 0;
  for (const auto& [b, e] : slots) {
    ASSERT_EQ(b, at) << "slots must tile the rows without overlap";
    at = e;
  }
  ASSERT_EQ(at, p.rows);
}
}  // namespace

TEST(ExpertBuckets, SmallAndEdgeCases) {
  check_plan({});
  check_plan({0, 0, 0});
  check_plan({1});             // a count below 8 still gets its slot (no endless bucket loop)
  check_plan({1, 1, 2, 0, 7});
  check_plan({8, 8, 8, 8});
  const auto p = plan_expert_buckets(std::vector<int>{100, 5, 90, 0, 76});
  // {100, 90} share cap 104 (4*90 >= 3*104); 76 falls below 3/4 of 104 and opens cap 80; {5} -> 8.
  ASSERT_EQ(p.buckets.size(), 3u);
  EXPECT_EQ(p.buckets[0].cap, 104);
  EXPECT_EQ(p.buckets[0].count, 2u);
  EXPECT_EQ(p.buckets[1].cap, 80);
  EXPECT_EQ(p.buckets[2].cap, 8);
  EXPECT_EQ(p.rows, 2 * 104 + 80 + 8);
  EXPECT_EQ(p.base[0], 0);
  EXPECT_EQ(p.base[2], 104);
  EXPECT_EQ(p.base[4], 208);
  EXPECT_EQ(p.base[1], 288);
}

TEST(ExpertBuckets, SkewedRoutingPadsFarLessThanOneCapacity) {
  std::mt19937 rng(7);
  std::gamma_distribution<double> load(1.5, 470.0);  // mean ~700 assignments, long tail
  std::vector<int> counts(768);
  for (auto& c : counts) c = static_cast<int>(load(rng));
  check_plan(counts);
  const auto p = plan_expert_buckets(counts);
  std::int64_t real = 0;
  for (int c : counts) real += c;
  const int mx = *std::max_element(counts.begin(), counts.end());
  const std::int64_t one_capacity = static_cast<std::int64_t>(counts.size()) * ((mx + 7) / 8 * 8);
  EXPECT_LT(static_cast<double>(p.rows), 1.4 * static_cast<double>(real));
  EXPECT_LT(p.rows * 2, one_capacity);
}

TEST(ExpertTiles, CoverEveryLiveRowOnceInTheGivenOrder) {
  const std::vector<int> counts{0, 300, 5, 128};
  const std::vector<std::int64_t> base{0, 8, 400, 512};
  const std::vector<int> order{3, 1, 2};  // empty experts may be left out
  std::vector<ExpertTile> tiles(static_cast<std::size_t>(expert_tile_count(counts, order)));
  ASSERT_EQ(tiles.size(), 1u + 3u + 1u);
  fill_expert_tiles(counts, base, order, tiles);
  EXPECT_EQ(tiles[0].expert, 3);
  EXPECT_EQ(tiles[0].row0, 512);
  EXPECT_EQ(tiles[0].valid, 128);
  EXPECT_EQ(tiles[1].row0, 8);
  EXPECT_EQ(tiles[2].row0, 8 + kExpertTileRows);
  EXPECT_EQ(tiles[3].valid, 300 - 2 * kExpertTileRows);
  EXPECT_EQ(tiles[4].expert, 2);
  EXPECT_EQ(tiles[4].valid, 5);
}
