// Workload validation (the fail-closed combinations), the seed's cu_seqlens remap and the local
// attention plan (which query rows meet which keys, per Ring step and request).
#include "attention/plan.hpp"
#include "attention/workload.hpp"
#include "collectives/error.hpp"

#include <gtest/gtest.h>

#include <string>

namespace layerbench::attention {
namespace {

Problem base(long long seq, int heads, long long lt = 0) {
  Problem p;
  p.seq = seq;
  p.heads = heads;
  p.head_dim = 8;
  p.text_tokens = lt;
  return p;
}

std::string reason(const Topology& t, const Problem& p, int world) {
  try {
    check_workload(t, p, world);
  } catch (const UsageError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST(Workload, RemapsCuSeqlensAsTheSeed) {
  // Documents [0, 8, 12] over A = 2 ranks of 6 query rows each.
  EXPECT_EQ(remap_cu_seqlens({0, 8, 12}, 0, 6), (std::vector<long long>{0, 6, 6}));
  EXPECT_EQ(remap_cu_seqlens({0, 8, 12}, 6, 12), (std::vector<long long>{0, 2, 6}));
  EXPECT_EQ(packed_requests(12, 3), (std::vector<long long>{0, 2, 6, 12}));
  EXPECT_THROW(packed_requests(2, 3), UsageError);
}

TEST(Workload, FailsClosedWithOneReason) {
  const Topology usp2 = parse_topology("usp2"), ring2 = parse_topology("usp2+ring2");
  Problem p = base(64, 4, 4);
  p.cu_seqlens = {0, 10, 64};
  EXPECT_NE(reason(usp2, p, 2).find("joint tokens"), std::string::npos);  // packed + joint
  p = base(64, 6);
  EXPECT_NE(reason(parse_topology("usp4+ring2+uaa"), p, 8).find("Ring"), std::string::npos);
  p.kv_heads = 1;  // GQA 6/1: U = 2 needs 2 | KV heads
  EXPECT_NE(reason(usp2, p, 2).find("K/V heads"), std::string::npos);
  p.kv_heads = 4;  // 6 % 4
  EXPECT_NE(reason(usp2, p, 2).find("--kv-heads"), std::string::npos);
  p = base(64, 4);
  p.joint_valid = {3};
  EXPECT_NE(reason(usp2, p, 2).find("joint K/V"), std::string::npos);
  p = base(64, 4, 4);
  p.joint_valid = {3, 2};  // batch 1
  EXPECT_NE(reason(usp2, p, 2).find("one per request"), std::string::npos);
  p = base(64, 4);
  p.causal = true;
  EXPECT_NE(reason(ring2, p, 4).find("causal"), std::string::npos);
  p = base(62, 4);  // 62 rows do not split into 4 equal regions
  EXPECT_NE(reason(parse_topology("ring4"), p, 4).find("regions"), std::string::npos);
  p = base(64, 4);
  p.batch = 2;
  p.cu_seqlens = {0, 10, 64};
  EXPECT_NE(reason(usp2, p, 2).find("batch 1"), std::string::npos);
  EXPECT_EQ(reason(ring2, base(64, 4, 3), 4), "");
}

TEST(Plan, UnmaskedFrontIsOneCall) {
  Problem p = base(64, 4, 5);
  p.cached_kv = 3;
  const Topology t = parse_topology("usp2+cp2");
  const auto l = rank_layout(t, p, 1, 0);
  const auto plan = plan_local_attention(p, l);
  // Joint rows and image rows meet the same keys [cached; joint; image]: one call for both.
  ASSERT_EQ(plan.calls.size(), 1u);
  EXPECT_TRUE(plan.direct);
  EXPECT_EQ(plan.calls[0].q0, 0);
  EXPECT_EQ(plan.calls[0].nq, 5 + 32);
  EXPECT_EQ(plan.calls[0].k0, 0);
  EXPECT_EQ(plan.calls[0].nk, 3 + 5 + 64);  // the superblock of A = 2 regions of 32 is the whole sequence
}

TEST(Plan, JointMaskSplitsFrontButNotRear) {
  Problem p = base(64, 4, 5);
  p.batch = 2;
  p.joint_valid = {2, 5};
  const Topology t = parse_topology("cp2");
  auto plan = plan_local_attention(p, rank_layout(t, p, 0, 0));
  EXPECT_FALSE(plan.direct);  // request 0: joint keys [0, 2) and image keys [5, 37) are apart
  // Request 0: two calls (one per key range) over all its rows, in two slots; request 1 (every
  // joint key valid): one call.
  ASSERT_EQ(plan.calls.size(), 3u);
  EXPECT_EQ(plan.slots, 2);
  EXPECT_EQ(plan.calls[0].slot, 0);
  EXPECT_EQ(plan.calls[1].slot, 1);
  EXPECT_EQ(plan.calls[2].slot, 0);  // another request: no row in common with slot 0's call
  const long long lq = 5 + 32;
  EXPECT_EQ(plan.lse_rows, 3 * lq);
  ASSERT_EQ(plan.partials.size(), 3u);
  EXPECT_EQ(plan.partials[2], (Partial{0, lq, 1, 2 * lq, 0}));
  p.joint = JointPosition::rear;
  plan = plan_local_attention(p, rank_layout(t, p, 0, 0));
  EXPECT_TRUE(plan.direct);  // [image; valid joint prefix] is contiguous
  EXPECT_EQ(plan.calls.size(), 2u);  // 2 requests, image and joint query rows in one call each
  for (const auto& c : plan.calls) EXPECT_EQ(c.nk, 64 + (c.request == 0 ? 2 : 5));  // cp2 gathers all 64
  EXPECT_TRUE(plan.partials.empty());
}

TEST(Plan, RingVisitsEverySuperblockOnce) {
  const Problem p = base(64, 4);
  const Topology t = parse_topology("ring2+cp2");
  const auto plan = plan_local_attention(p, rank_layout(t, p, 0, 1));
  EXPECT_FALSE(plan.direct);
  ASSERT_EQ(plan.calls.size(), 2u);
  EXPECT_EQ(plan.calls[0].key_buffer, 0);
  EXPECT_EQ(plan.calls[1].key_buffer, 1);
  EXPECT_EQ(plan.calls[0].nk + plan.calls[1].nk, 64);
  // One slot per step (both cover every row), LSE ranges back to back.
  EXPECT_EQ(plan.slots, 2);
  EXPECT_EQ(plan.calls[1].slot, 1);
  EXPECT_EQ(plan.calls[1].lse_row0, plan.calls[0].nq);
}

TEST(Plan, PackedRequestsMeetOnlyTheirKeys) {
  Problem p = base(12, 2);
  p.cu_seqlens = {0, 8, 12};
  const Topology t = parse_topology("cp2");
  const auto plan = plan_local_attention(p, rank_layout(t, p, 1, 0));  // query rows 6..11
  ASSERT_EQ(plan.calls.size(), 2u);
  EXPECT_EQ(plan.calls[0].q0, 0);
  EXPECT_EQ(plan.calls[0].nq, 2);  // rows 6, 7 of request 0 ...
  EXPECT_EQ(plan.calls[0].k0, 0);
  EXPECT_EQ(plan.calls[0].nk, 8);  // ... meet its keys 0..7
  EXPECT_EQ(plan.calls[1].q0, 2);
  EXPECT_EQ(plan.calls[1].nq, 4);
  EXPECT_EQ(plan.calls[1].k0, 8);
  EXPECT_EQ(plan.calls[1].nk, 4);
  EXPECT_TRUE(plan.direct);
}

}  // namespace layerbench::attention
