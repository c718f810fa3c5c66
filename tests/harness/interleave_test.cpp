// Neighbouring stacks (harness/interleave.hpp): every timed stack of the A/B pairs and the what-if
// rounds follows one of its own variant, and with that the replication what-if's removal step and
// slope predict what a removal A/B measures on a stack whose time carries over from the stack
// before it (the power-capped GPU's clocks). Synthetic stacks, no clocks: exact arithmetic.
#include "harness/interleave.hpp"
#include "harness/whatif.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace layerbench::harness {
namespace {

TEST(Interleave, PrimerRunsUntimedStacksOnlyWhereTheVariantChanges) {
  NeighbourPrimer p(2);
  int untimed = 0, timed = 0;
  auto u = [&] {
    ++untimed;
    return 1.0;
  };
  auto t = [&] {
    ++timed;
    return 1.0;  // every stack as long as the next: the count decides
  };
  auto primes = [&](int variant) {
    const int before = untimed;
    EXPECT_EQ(p.run(variant, u, t), 1.0);
    return untimed - before;
  };
  EXPECT_EQ(primes(0), 2);  // nothing ran before: primed
  EXPECT_EQ(primes(0), 0);
  EXPECT_EQ(primes(1), 2);
  EXPECT_EQ(primes(1), 0);
  p.pause();  // host work between stacks: the next one is primed even of the same variant
  EXPECT_EQ(primes(1), 2);
  p.ran(0, 1.0);  // a warm-up stack of another variant
  EXPECT_EQ(primes(0), 0);
  EXPECT_EQ(untimed, 6);
  EXPECT_EQ(timed, 6);
  EXPECT_EQ(p.primed(), 6u);
  NeighbourPrimer off(0);
  EXPECT_EQ(off.run(3, u, t), 1.0);
  EXPECT_EQ(off.run(4, u, t), 1.0);
  EXPECT_EQ(untimed, 6);
}

// A short stack after a long one of another variant is primed for as long as the long one ran
// (at least the count, at most max_stacks_per_change stacks); a stack without a time (not finite)
// asks for the count only.
TEST(Interleave, PrimerMatchesTheLengthOfTheStackBefore) {
  NeighbourPrimer p(1);
  double short_ms = 6, long_ms = 276;
  int untimed = 0;
  auto run = [&](int variant, double ms) {
    const int before = untimed;
    p.run(variant, [&] { return ++untimed, ms; }, [&] { return ms; });
    return untimed - before;
  };
  EXPECT_EQ(run(8, long_ms), 1);    // nothing before: the count
  EXPECT_EQ(run(0, short_ms), 46);  // 46 x 6 ms = 276 ms
  EXPECT_EQ(run(8, long_ms), 1);    // a long stack after a short one: one is as long
  EXPECT_EQ(run(1, 39.5), 7);       // 7 x 39.5 >= 276
  p.ran(3, 1e9);
  EXPECT_EQ(run(0, short_ms), NeighbourPrimer::max_stacks_per_change);
  p.ran(3, 100);
  EXPECT_EQ(run(0, std::nan("")), 1);
  NeighbourPrimer two(2);
  two.ran(5, 10);
  int n = 0;
  two.run(6, [&] { return ++n, 4.0; }, [] { return 4.0; });
  EXPECT_EQ(n, 3);  // 3 x 4 >= 10 (more than the count of 2)
}

// The pairs alternate AB, BA; every timed stack directly follows a stack of its own arm.
TEST(Interleave, EveryTimedStackOfThePairsFollowsItsOwnArm) {
  std::vector<std::pair<bool, bool>> ran;  // (candidate, timed) in order
  auto stack = [&](bool candidate, bool timed) {
    ran.emplace_back(candidate, timed);
    return candidate ? 1.0 : 2.0;
  };
  const auto r = run_interleaved_pairs(2, 9, 1, stack);
  ASSERT_EQ(r.base.size(), 9u);
  ASSERT_EQ(r.cand.size(), 9u);
  EXPECT_EQ(r.order.front(), "AB");
  EXPECT_EQ(r.order[1], "BA");
  EXPECT_EQ(r.base.front(), 2.0);
  EXPECT_EQ(r.cand.front(), 1.0);
  std::size_t timed = 0, untimed = 0;
  for (std::size_t i = 0; i < ran.size(); ++i) {
    (ran[i].second ? timed : untimed) += 1;
    if (ran[i].second) {
      ASSERT_GT(i, 0u);
      EXPECT_EQ(ran[i - 1].first, ran[i].first) << "timed stack " << i << " follows the other arm";
    }
  }
  EXPECT_EQ(timed, 18u);
  EXPECT_EQ(untimed, 4u + r.primed);  // the warm-up pairs, then the primes at each change of arm
  // AB BA AB ...: the arm changes inside every pair and never between pairs, but the warm-up ends
  // on the candidate, so the first pair's base is primed too. A base stack (2 ms) after the
  // candidate takes one prime, a candidate stack (1 ms) after the base two: pair 0 3, the odd
  // pairs (BA after AB's candidate: the base changes) 1, the even pairs after it 2.
  EXPECT_EQ(r.primed, 3u + 4u * 1u + 4u * 2u);
  // A stop rule ends the pairs early; without primes the stacks follow either arm.
  ran.clear();
  const auto s = run_interleaved_pairs(1, 50, 0, stack, [](const PairTimes& t) { return t.base.size() == 5; });
  EXPECT_EQ(s.base.size(), 5u);
  EXPECT_EQ(s.primed, 0u);
  EXPECT_EQ(ran.size(), 2u + 10u);
}

// A stack whose time carries over from the stack before it, as the H200's did: each copy of the
// component costs `direct` ms in its own stack, and every copy the previous stack ran changes this
// one by `carry` ms (negative: a low-power component left the clocks higher). 8 instances per
// stack, copies 0..3 per instance.
struct CarryOverStack {
  double direct = 4.0, carry = -0.8, noise = 0.02;
  int previous = 0;
  std::mt19937_64 rng{5};
  double run(int level) {
    std::normal_distribution<double> eps(0, noise);
    const double ms = 60.0 + direct * level + carry * previous + eps(rng);
    previous = level;
    return ms;
  }
};

WhatIfResult replicate(CarryOverStack& s, int prime_stacks) {
  WhatIfOptions o;
  o.rounds = 8;
  o.resamples = 2000;
  o.prime_stacks = prime_stacks;
  const WhatIfTarget t{"routing", Edge::end, DelayKind::device, WhatIfMethod::replicate};
  return run_replicate_what_if(o, t, 8, 36, {}, [&](int k) { return s.run(k); });
}

double ab_removal(CarryOverStack& s, int prime_stacks) {
  const auto r = run_interleaved_pairs(1, 40, prime_stacks, [&](bool cand, bool) { return s.run(cand ? 0 : 1); });
  double d = 0;
  for (std::size_t i = 0; i < r.base.size(); ++i) d += r.base[i] - r.cand[i];
  return d / static_cast<double>(r.base.size());
}

// One copy minus none, paired within the order-balanced rounds (levels 0 and 1 of copies 0..3).
double round_step(const WhatIfResult& r) {
  std::map<std::size_t, double> y0, y1;
  for (std::size_t i = 0; i < r.y_ms.size(); ++i)
    if (r.level[i] <= 1) (r.level[i] == 0 ? y0 : y1)[r.round[i]] = r.y_ms[i];
  double d = 0;
  for (const auto& [round, t0] : y0) d += y1.at(round) - t0;
  return d / static_cast<double>(y0.size());
}

// Without primes the two disagree the way the GPU runs did: the rounds' removal step (one copy
// minus none) reads above the A/B's removal, because the stack without the component mostly
// follows stacks with more copies. With primes both measure each variant after itself: the
// removal step, the slope and the A/B's removal all read direct + carry.
TEST(Interleave, PrimedWhatIfPredictsThePrimedRemovalUnderCarryOver) {
  CarryOverStack s;
  const auto unprimed = replicate(s, 0);
  const double ab_unprimed = ab_removal(s, 0);
  EXPECT_NEAR(ab_unprimed, s.direct, 0.05);  // the A/B's arms follow each arm equally often
  // The step of the order-balanced rounds (the step rounds that may follow alternate like the A/B).
  EXPECT_GT(round_step(unprimed) - ab_unprimed, 0.5) << round_step(unprimed);
  EXPECT_EQ(unprimed.primed_stacks, 0u);

  const auto primed = replicate(s, 1);
  const double ab_primed = ab_removal(s, 1);
  const double steady = s.direct + s.carry;  // per stack, one copy per instance -> none
  EXPECT_NEAR(ab_primed, steady, 0.05);
  EXPECT_NEAR(primed.removal_step_ms, steady, 0.05);
  EXPECT_NEAR(primed.fit.slope * 8, steady, 0.05);
  EXPECT_NEAR(primed.effect_ms(8), ab_primed, 0.1);
  EXPECT_GT(primed.primed_stacks, 0u);
  EXPECT_EQ(primed.to_json(0.95)["primed_stacks"], primed.primed_stacks);
}

// A power-capped GPU's clocks relax towards each stack's own state over time, so a stack's time
// depends on how long the stacks before it ran, not only on which ran: a throttle state that each
// stack pulls towards its own level (heavier stacks throttle more) with a time constant of 50 ms.
// Copies 0, 1, 4, 8 of a 8.4 ms component in a 4-instance stack: stacks of 6 to 276 ms, as
// DeepSeek-V3's expert computation on an H100 (results/moe/2026-12-07-h100-i).
struct RelaxingStack {
  double base = 6, per_copy = 8.375, tau = 50, gain = 0.08, noise = 0.002;
  double state = 0;
  std::mt19937_64 rng{11};
  double nominal(int copies) const { return base + 4 * per_copy * copies; }
  double equilibrium(int copies) const { return std::min(1.0, nominal(copies) / 280); }
  double run(int copies) {
    const double t = nominal(copies), eq = equilibrium(copies), decay = std::exp(-t / tau);
    const double mean_state = eq + (state - eq) * (1 - decay) * tau / t;  // the state's mean over the stack
    state = eq + (state - eq) * decay;
    std::normal_distribution<double> eps(0, noise);
    return t * (1 + gain * mean_state) + eps(rng);
  }
  double steady(int copies) const { return nominal(copies) * (1 + gain * equilibrium(copies)); }
};

// Primed by the neighbour's length, the stack without the component times within 1% of its steady
// state in the rounds (where it follows stacks of 39 to 276 ms) and in the A/B (after 39 ms stacks),
// and the rounds' removal step predicts the A/B's removal to 0.5%. Primed by one stack, as before,
// the 6 ms stack after a 276 ms one kept 7% of throttle and the step read 1% under the removal.
TEST(Interleave, PrimingByTheNeighboursLengthClearsTheClocksLongStacksLeave) {
  RelaxingStack s;
  WhatIfOptions o;
  o.rounds = 8;
  o.resamples = 2000;
  o.copies = {0, 1, 4, 8};
  o.prime_stacks = 1;
  const WhatIfTarget t{"expert_compute", Edge::end, DelayKind::device, WhatIfMethod::replicate};
  const auto w = run_replicate_what_if(o, t, 4, 58, {}, [&](int k) { return s.run(k); });
  for (std::size_t i = 0; i < w.y_ms.size(); ++i) {
    if (w.level[i] == 0) {
      EXPECT_NEAR(w.y_ms[i], s.steady(0), 0.01 * s.steady(0)) << "round " << w.round[i];
    }
  }
  const auto ab = run_interleaved_pairs(1, 40, 1, [&](bool cand, bool) { return s.run(cand ? 0 : 1); });
  double removal = 0;
  for (std::size_t i = 0; i < ab.base.size(); ++i) {
    EXPECT_NEAR(ab.cand[i], s.steady(0), 0.01 * s.steady(0));
    removal += (ab.base[i] - ab.cand[i]) / static_cast<double>(ab.base.size());
  }
  ASSERT_TRUE(std::isfinite(w.removal_step_ms));
  EXPECT_NEAR(w.removal_step_ms, removal, 0.005 * removal) << "step " << w.removal_step_ms << " A/B " << removal;
  EXPECT_GT(w.primed_stacks, 40u);  // a 6 ms stack after a 276 ms one takes 46
}

}  // namespace
}  // namespace layerbench::harness
