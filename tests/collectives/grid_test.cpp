#include "collectives/grid.hpp"
#include "collectives/types.hpp"

#include <gtest/gtest.h>

#include <set>

using layerbench::GridLayout;

TEST(GridLayout, UlyssesContiguousAllGatherStridedUpTo16Ranks) {
  for (int world = 1; world <= 16; ++world) {
    for (int u = 1; u <= world; ++u) {
      if (world % u) {
        EXPECT_THROW(GridLayout::make(world, u, world / u + 1), std::invalid_argument);
        continue;
      }
      const int a = world / u;
      const auto g = GridLayout::make(world, u, a);
      std::set<std::pair<int, int>> seen;
      for (int r = 0; r < world; ++r) {
        // Contiguous inner block, strided outer group, positions consistent with membership.
        EXPECT_EQ(g.inner_members(g.inner_group(r))[static_cast<std::size_t>(g.inner_rank(r))], r);
        EXPECT_EQ(g.outer_members(g.outer_group(r))[static_cast<std::size_t>(g.outer_rank(r))], r);
        EXPECT_EQ(g.inner_group(r), r / u);
        EXPECT_EQ(g.outer_group(r), r % u);
        // Every (inner group, outer group) pair is met by exactly one rank.
        EXPECT_TRUE(seen.insert({g.inner_group(r), g.outer_group(r)}).second);
      }
      for (int grp = 0; grp < a; ++grp) {
        const auto m = g.inner_members(grp);
        ASSERT_EQ(static_cast<int>(m.size()), u);
        for (int i = 1; i < u; ++i) EXPECT_EQ(m[static_cast<std::size_t>(i)], m[static_cast<std::size_t>(i - 1)] + 1);
      }
      for (int grp = 0; grp < u; ++grp) {
        const auto m = g.outer_members(grp);
        ASSERT_EQ(static_cast<int>(m.size()), a);
        for (int j = 1; j < a; ++j) EXPECT_EQ(m[static_cast<std::size_t>(j)], m[static_cast<std::size_t>(j - 1)] + u);
      }
    }
  }
}

TEST(GridLayout, PaperExamples) {
  const auto g = GridLayout::make(8, 2, 4);  // sp_attention.md: U = 2, A = 4
  EXPECT_EQ(g.inner_members(3), (std::vector<int>{6, 7}));
  EXPECT_EQ(g.outer_members(1), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_THROW(GridLayout::make(3, 2, 2), std::invalid_argument);
  EXPECT_THROW(GridLayout::make(4, 0, 4), std::invalid_argument);
}

TEST(Bf16, RoundToNearestEven) {
  using namespace layerbench;
  EXPECT_EQ(bf16_bits_to_float(float_to_bf16_bits(1.0f)), 1.0f);
  EXPECT_EQ(bf16_bits_to_float(float_to_bf16_bits(-7.0f)), -7.0f);
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: rounds to even (1).
  EXPECT_EQ(bf16_bits_to_float(float_to_bf16_bits(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(bf16_bits_to_float(float_to_bf16_bits(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
}
