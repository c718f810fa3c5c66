#include "attention/topology.hpp"
#include "collectives/error.hpp"

#include <gtest/gtest.h>

namespace layerbench::attention {

TEST(Topology, ParsesAllForms) {
  const auto ts = parse_topologies("usp4+uaa,cp4,usp2+cp2");
  ASSERT_EQ(ts.size(), 3u);
  EXPECT_EQ(ts[0].label, "usp4+uaa");
  EXPECT_EQ(ts[0].ulysses, 4);
  EXPECT_TRUE(ts[0].uaa);
  EXPECT_EQ(ts[1].allgather, 4);
  EXPECT_EQ(ts[1].ulysses, 1);
  EXPECT_EQ(ts[2].ulysses, 2);
  EXPECT_EQ(ts[2].allgather, 2);
  EXPECT_EQ(parse_topology("cp2+usp2").label, "usp2+cp2");
}

TEST(Topology, RejectsBadSpellings) {
  for (const char* bad : {"", "usp", "usp0", "uspx", "cp2+cp2", "uaa", "cp2+uaa", "ring2", "usp2,usp2"})
    EXPECT_THROW(parse_topologies(bad), UsageError) << bad;
}

TEST(Topology, StrictHeadsAndWorld) {
  EXPECT_THROW(check_topology(parse_topology("usp4"), 4, 14, 256), UsageError);  // 14 % 4
  EXPECT_NO_THROW(check_topology(parse_topology("usp4+uaa"), 4, 14, 256));
  EXPECT_THROW(check_topology(parse_topology("usp2+cp2"), 3, 14, 256), UsageError);  // U*A != 3
  EXPECT_THROW(check_topology(parse_topology("cp4"), 4, 14, 258), UsageError);        // regions
  EXPECT_NO_THROW(check_topology(parse_topology("usp4+uaa"), 4, 14, 258));           // uneven ok
}

TEST(Topology, PaddingAndShards) {
  EXPECT_EQ(parse_topology("usp4+uaa").padded_heads(14), 16);
  EXPECT_EQ(parse_topology("usp2+uaa").padded_heads(7), 8);
  EXPECT_EQ(parse_topology("usp2").padded_heads(14), 14);
  const auto sl = shard_lengths(parse_topology("usp4+uaa"), 258);
  EXPECT_EQ(sl, (std::vector<long long>{65, 65, 64, 64}));
  const auto grid = shard_lengths(parse_topology("usp2+cp2"), 256);
  EXPECT_EQ(grid, (std::vector<long long>{64, 64, 64, 64}));
}

}  // namespace layerbench::attention
