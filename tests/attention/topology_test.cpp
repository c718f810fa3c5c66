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
  for (const char* bad : {"", "usp", "usp0", "uspx", "cp2+cp2", "uaa", "cp2+uaa", "ring", "ring2+ring2", "usp2,usp2",
                          "p2p2"})
    EXPECT_THROW(parse_topologies(bad), UsageError) << bad;
}

TEST(Topology, StrictHeadsAndWorld) {
  EXPECT_THROW(check_topology(parse_topology("usp4"), 4, 14, 256), UsageError);  // 14 % 4
  EXPECT_NO_THROW(check_topology(parse_topology("usp4+uaa"), 4, 14, 256));
  EXPECT_THROW(check_topology(parse_topology("usp2+cp2"), 3, 14, 256), UsageError);  // U*R*A != 3
  EXPECT_THROW(check_topology(parse_topology("ring4"), 4, 14, 258), UsageError);      // regions
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

TEST(Topology, OneGrammarForEveryDegree) {
  const auto t = parse_topology("ring2+usp2");
  EXPECT_EQ(t.label, "usp2+ring2");
  EXPECT_EQ(t.ulysses, 2);
  EXPECT_EQ(t.ring, 2);
  EXPECT_EQ(t.world(), 4);
  EXPECT_EQ(parse_topology("cp2+ring2+usp2").label, "usp2+ring2+cp2");
  EXPECT_EQ(parse_topology("usp1").label, "usp1");
  EXPECT_EQ(parse_topology("usp1").world(), 1);
  EXPECT_EQ(shard_lengths(parse_topology("usp2+ring2"), 64), (std::vector<long long>{16, 16, 16, 16}));
}

TEST(Topology, EnumeratesEveryFactorisation) {
  // 8 = U*R*A: 10 ordered factorisations; +uaa where U does not divide 6 heads (U = 4, 8).
  const auto all = all_topologies(8, 6);
  int strict = 0, uaa = 0;
  for (const auto& t : all) {
    EXPECT_EQ(t.world(), 8) << t.label;
    EXPECT_EQ(parse_topology(t.label).label, t.label);
    (t.uaa ? uaa : strict)++;
  }
  EXPECT_EQ(strict, 10);
  EXPECT_EQ(uaa, 3);  // U = 4 with (R, A) = (1, 2) or (2, 1), and U = 8
}

}  // namespace layerbench::attention
