// Host-only tests of the MoE geometry, plans and primitives (no MPI).
#include "collectives/error.hpp"
#include "moe/magi2/config.hpp"
#include "moe/init.hpp"
#include "moe/magi2/ops.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace layerbench;
using namespace layerbench::moe;

TEST(MoePlan, SpPadsHeadsAndShardsTokens) {
  Geometry g;
  const std::vector<std::int64_t> splits(8, 10);
  const Plan p6 = make_plan(g, Layout::sp, 6, 8, splits);
  EXPECT_EQ(p6.heads_padded, 16);
  EXPECT_EQ(p6.heads_local, 2);
  EXPECT_EQ(p6.heads_valid, 0);  // ranks 6 and 7 own only padding
  const Plan p5 = make_plan(g, Layout::sp, 5, 8, splits);
  EXPECT_EQ(p5.heads_valid, 2);
  const Plan q = make_plan(g, Layout::sp, 2, 4, {2, 3, 4, 5});
  EXPECT_EQ(q.local_tokens, 4);
  EXPECT_EQ(q.token0, 5);
  EXPECT_EQ(q.moe_tokens, 14);
  EXPECT_EQ(q.heads_local, 3);
}

TEST(MoePlan, ModalitySegmentsFollowTheReference) {
  EXPECT_EQ(modality_of(0, 100), kText);
  EXPECT_EQ(modality_of(5, 100), kVideo);
  EXPECT_EQ(modality_of(50, 100), kAudio);
  EXPECT_EQ(modality_of(55, 100), kVideo);
  const auto segs = modality_segments(0, 100, 100);
  ASSERT_EQ(segs.size(), 4u);
  EXPECT_EQ(segs[0].count, 5);
  EXPECT_EQ(segs[2].modality, kAudio);
}

TEST(MoeOps, Swiglu7ClampsAsSpecified) {
  EXPECT_NEAR(swiglu7(0.0f, 3.0f), 0.0f, 1e-7);
  const float g = 100.0f, u = -100.0f;  // g' = 7, u' = -7
  EXPECT_NEAR(swiglu7(g, u), 7.0f / (1.0f + std::exp(-1.702f * 7.0f)) * -6.0f, 1e-4);
  EXPECT_NEAR(swiglu7(1.0f, 0.5f), 1.0f / (1.0f + std::exp(-1.702f)) * 1.5f, 1e-6);
}

TEST(MoeOps, SeededValuesAreDeterministicAndBounded) {
  EXPECT_EQ(seeded_value(1, kSplit, 7, 1.0f), seeded_value(1, kSplit, 7, 1.0f));
  EXPECT_NE(seeded_value(1, kSplit, 7, 1.0f), seeded_value(2, kSplit, 7, 1.0f));
  for (int i = 0; i < 1000; ++i) EXPECT_LT(std::fabs(seeded_value(3, kMerge, i, 0.5f)), 0.5f + 1e-7f);
}

TEST(MoeOps, RoutingSelectsTopKWithBiasForSelectionOnly) {
  auto ops = make_host_ops();
  // One token, one head, d = 1: logits = x * gate; bias makes expert 0 win though its score is lowest.
  const float x[1] = {1.0f};
  const float gate[4] = {-1.0f, 0.5f, 1.0f, 2.0f};
  const float bias[4] = {5.0f, 0.0f, 0.0f, 0.0f};
  RoutedArgs r;
  r.x = x;
  r.gate = gate;
  r.bias = bias;
  r.tokens = 1;
  r.heads_local = r.heads_valid = 1;
  r.experts = 4;
  r.d = 1;
  r.topk = 2;
  r.scale = 4.9f;
  ops->route(r, {});
  const auto counts = ops->expert_counts(r);
  EXPECT_EQ(counts, (std::vector<std::int64_t>{1, 0, 0, 1}));
}
