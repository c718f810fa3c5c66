// The what-if acceptance on the host: a synthetic stack whose layers start an asynchronous
// operation (a deadline, as a GPU kernel runs beside the host), do host work while it runs
// ("launch", hidden behind it) and then a host step after waiting for it ("read", on the critical
// path, like the exchange's host read). Delaying "read" must give a critical-path fraction whose
// interval contains 1; delaying "launch" one whose interval contains 0 and excludes 1. Plus the
// replication slope and removal step, the order balance of the rounds and the flag parsing.
//
// The synthetic stacks keep time on a virtual clock that only counted work advances (each piece
// of work by its length plus a seeded jitter of 0-2 us, so that the fits see noise as a real clock
// gives them): the estimators are tested exactly, and no load on the test machine moves a figure.
#include "harness/whatif.hpp"

#include "collectives/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <random>

namespace layerbench::harness {
namespace {

class VirtualClock {
 public:
  explicit VirtualClock(std::uint64_t seed) : state_(seed) {}
  double now_us() const { return t_us_; }
  void work(double us) { t_us_ += us + jitter_us(); }          // host work of `us`
  void wait_until(double t_us) { t_us_ = std::max(t_us_, t_us); }  // an asynchronous operation's end

 private:
  double jitter_us() {  // splitmix64: the same sequence on every platform
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return 2.0 * static_cast<double>(z >> 11) / 9007199254740992.0;
  }
  double t_us_ = 0;
  std::uint64_t state_;
};

// A host-wait hook on the virtual clock: `us` at the end edge of one component.
class VirtualDelays final : public DelayHook {
 public:
  explicit VirtualDelays(VirtualClock& clock) : clock_(clock) {}
  void set(const std::string& component, double us) {
    component_ = component;
    us_ = us;
  }
  void at(std::string_view component, Edge edge, Stream) override {
    if (edge != Edge::end || component != component_) return;
    ++injected;
    clock_.work(us_);
  }
  std::size_t injected = 0;

 private:
  VirtualClock& clock_;
  std::string component_;
  double us_ = 0;
};

class SyntheticStack {
 public:
  SyntheticStack(VirtualClock& clock, DelayHook& hook) : clock_(clock), hook_(hook) {}
  double run(int layers) {
    const double t0 = clock_.now_us();
    for (int l = 0; l < layers; ++l) {
      const double done = clock_.now_us() + 1500;  // the asynchronous operation completes then
      hook_.at("launch", Edge::begin, {});
      clock_.work(300);  // host work overlapped by the operation
      hook_.at("launch", Edge::end, {});
      clock_.wait_until(done);
      hook_.at("read", Edge::begin, {});
      clock_.work(100);  // host work after the wait: nothing overlaps it
      hook_.at("read", Edge::end, {});
    }
    return (clock_.now_us() - t0) / 1000.0;
  }

 private:
  VirtualClock& clock_;
  DelayHook& hook_;
};

double calibrate_virtual_spin(VirtualClock& clock, double us, int reps) {  // median of 7 passes, as calibrate_host_spin
  std::vector<double> per;
  for (int p = 0; p < 7; ++p) {
    const double t0 = clock.now_us();
    for (int i = 0; i < reps; ++i) clock.work(us);
    per.push_back((clock.now_us() - t0) / 1000.0 / reps);
  }
  std::sort(per.begin(), per.end());
  return per[3];
}

WhatIfResult what_if(const std::string& component) {
  VirtualClock clock(component == "read" ? 1 : 2);
  VirtualDelays delays(clock);
  SyntheticStack stack(clock, delays);
  WhatIfOptions o;
  o.levels_us = {0, 150, 300, 600};
  o.rounds = 20;
  o.resamples = 10000;
  // A 95% interval misses the truth in one run of twenty by construction (here: in one seed of
  // twenty), and these figures are precise to a few microseconds in 10 ms: the acceptance reads a
  // 99.9% interval.
  o.confidence = 0.999;
  const WhatIfTarget t{component, Edge::end, DelayKind::host};
  constexpr int kLayers = 6;
  const std::vector<double> cost = {component == "read" ? 0.1 : 0.3};
  auto r = run_what_if(
      o, t, kLayers, 36, cost, [&](double us) { return calibrate_virtual_spin(clock, us, o.calibration_reps); },
      [&](double us) {
        delays.set(component, us);
        const auto n0 = delays.injected;
        const double ms = stack.run(kLayers);
        EXPECT_EQ(delays.injected - n0, static_cast<std::size_t>(kLayers));
        return ms;
      });
  return r;
}

TEST(WhatIf, CriticalHostWaitHasFractionOne) {
  const auto r = what_if("read");
  EXPECT_TRUE(r.fit.ci.contains(1.0)) << "fraction " << r.fit.slope << " CI [" << r.fit.ci.low << ", " << r.fit.ci.high << "]";
  EXPECT_NEAR(r.fit.slope, 1.0, 0.01);
  ASSERT_EQ(r.calibrated_ms.size(), 4u);
  EXPECT_NEAR(r.calibrated_ms[3], 0.601, 0.001);  // 600 us of work and 1 us of jitter on average
  EXPECT_EQ(r.x_ms.size(), 80u);
  // Removing a critical 0.1 ms step 36 times saves ~3.6 ms.
  const auto ci = r.effect_ci(36, 0.999);
  EXPECT_TRUE(ci.contains(r.effect_ms(36)));
  EXPECT_NEAR(r.effect_ms(36), 3.6, 0.1);
  const auto j = r.to_json(0.95);
  EXPECT_EQ(j["levels"].size(), 4u);
  EXPECT_EQ(j["instances_per_stack"], 6);
}

TEST(WhatIf, HiddenWorkHasFractionZero) {
  const auto r = what_if("launch");
  EXPECT_TRUE(r.fit.ci.contains(0.0)) << "fraction " << r.fit.slope << " CI [" << r.fit.ci.low << ", " << r.fit.ci.high << "]";
  EXPECT_FALSE(r.fit.ci.contains(1.0));
  EXPECT_NEAR(r.fit.slope, 0.0, 0.01);
  const auto md = what_if_markdown({r}, 0.95);
  EXPECT_NE(md.find("| launch | delay (host wait) |"), std::string::npos) << md;
}

// Replication on the virtual clock: a stack of 6 layers, each 1 ms of other work and a serial 0.25 ms
// component run k times. The slope is the component's cost per copy; the rounds stop once the
// interval is within 10% of it; the predicted removal is slope x instances per forward.
TEST(WhatIf, ReplicationSlopeIsTheCostPerCopy) {
  WhatIfOptions o;
  o.rounds = 4;
  o.resamples = 4000;
  const WhatIfTarget t{"serial", Edge::end, DelayKind::device, WhatIfMethod::replicate};
  constexpr int kLayers = 6;
  int stacks = 0;
  VirtualClock clock(3);
  auto stack = [&](int k) {
    ++stacks;
    const double t0 = clock.now_us();
    for (int l = 0; l < kLayers; ++l) {
      clock.work(1000);
      for (int c = 0; c < k; ++c) clock.work(250);
    }
    return (clock.now_us() - t0) / 1000.0;
  };
  const std::vector<double> cost = {0.25, 0.251, 0.249};
  const auto r = run_replicate_what_if(o, t, kLayers, 36, cost, stack);
  EXPECT_EQ(r.target.method, WhatIfMethod::replicate);
  EXPECT_NEAR(r.fit.slope, 0.251, 0.001);  // 250 us of work and 1 us of jitter on average per copy
  EXPECT_NEAR(r.slope_median, 0.251, 0.001);
  EXPECT_EQ(r.stop, "interval within target");
  // The stopping rule and the prediction read the t interval over rounds.
  EXPECT_EQ(r.slope_ci().low, r.fit.block_t_ci.low);
  EXPECT_LE(std::max(r.fit.slope - r.fit.block_t_ci.low, r.fit.block_t_ci.high - r.fit.slope), 0.1 * r.fit.slope);
  // One untimed round, then the timed ones, each after an untimed stack of its own level where
  // the stack before it ran another level.
  EXPECT_GT(r.primed_stacks, 0u);
  EXPECT_EQ(stacks, 4 + 4 * static_cast<int>(r.fit.blocks) + static_cast<int>(r.primed_stacks));
  // Linear: the removal (from the step where it is known, else the slope) is the cost per copy.
  EXPECT_NEAR(r.effect_ms(36), 0.251 * 36, 0.01 * 0.251 * 36);
  const auto ci = r.effect_ci(36, 0.95);
  if (r.removal_from_step) EXPECT_DOUBLE_EQ(ci.low, r.removal_step_ci.low / kLayers * 36);
  else EXPECT_DOUBLE_EQ(ci.low, r.fit.block_t_ci.low * 36);
  EXPECT_FALSE(r.energy_fit.has_value());  // no meter: no energy, never zero
  const auto j = r.to_json(0.95);
  EXPECT_EQ(j["method"], "replicate");
  EXPECT_EQ(j["slope_ci_method"], "t over rounds (df = rounds - 1)");
  EXPECT_DOUBLE_EQ(j["slope_ci"][0].get<double>(), r.fit.block_t_ci.low);
  EXPECT_TRUE(j["energy"].is_null());
  ASSERT_EQ(j["levels"].size(), 4u);
  EXPECT_EQ(j["levels"][0]["copies_per_instance"], 0);
  const auto md = what_if_markdown({r}, 0.95);
  EXPECT_NE(md.find("| serial | replicate | x0, x1, x2, x3 |"), std::string::npos) << md;
  // The table is a document section: one table of twelve columns, the notes as bullets, and the
  // markdown is the markdown printer's, after a blank line and ending with the last note.
  const auto sec = what_if_section({r}, 0.95, "group");
  EXPECT_EQ(sec.title, "What-if, group: stack of 6 instances");
  ASSERT_EQ(sec.tables.size(), 1u);
  ASSERT_EQ(sec.tables[0].rows.size(), 1u);
  EXPECT_EQ(sec.tables[0].rows[0].size(), sec.tables[0].headers.size());
  EXPECT_EQ(sec.tables[0].headers.size(), 12u);
  EXPECT_EQ(sec.tables[0].rows[0][1], "replicate");
  EXPECT_EQ(sec.notes, what_if_note_list());
  EXPECT_EQ(md.rfind("\n### What-if: stack of 6 instances\n\n| component | method |", 0), 0u) << md;
  EXPECT_EQ(md.substr(md.size() - sec.notes.back().size() - 1), sec.notes.back() + "\n");
  EXPECT_NE(reports::to_text(sec).find("  - replicate: "), std::string::npos);
  EXPECT_EQ(what_if_markdown({r}, 0.95, "", false).find("\n- "), std::string::npos);
  // With a meter (1 J per ms of stack), the energy per copy is the cost per copy in J.
  double joules = 0;
  auto metered = [&](int k) {
    const double ms = stack(k);
    joules += ms;
    return ms;
  };
  const auto re = run_replicate_what_if(o, t, kLayers, 36, cost, metered, nullptr, {}, [&] { return joules; });
  ASSERT_TRUE(re.energy_fit.has_value());
  EXPECT_NEAR(re.energy_fit->slope, re.fit.slope, 1e-9);
}

// The time cap: a target that cannot be met stops on the stacks' own time.
// The removal (one copy -> none) is measured in the same rounds. A stack whose first copy costs
// less than the later ones (a component that moves the clocks of the rest when it goes, under a
// power cap): the removal step, known to the target precision, predicts the removal; a linear
// stack whose step is too noisy to know keeps the slope.
TEST(WhatIf, RemovalStepPredictsTheRemovalWhereItIsKnown) {
  WhatIfOptions o;
  o.rounds = 8;
  o.max_seconds = 2;
  const WhatIfTarget t{"experts", Edge::end, DelayKind::device, WhatIfMethod::replicate};
  std::mt19937_64 rng(11);
  auto synthetic = [&](double first, double next, double noise) {
    return [&rng, first, next, noise](int k) {
      std::normal_distribution<double> eps(0, noise);
      return 60.0 + (k > 0 ? first + (k - 1) * next : 0.0) + eps(rng);
    };
  };
  const auto bent = run_replicate_what_if(o, t, 8, 36, {}, synthetic(37.0, 41.0, 0.3));
  EXPECT_TRUE(bent.removal_from_step);
  EXPECT_EQ(bent.removal_step_reason, "known to the target precision");
  EXPECT_NEAR(bent.effect_ms(8), 37.0, 1.0);  // per stack of 8 instances: the step, not 8 x the slope
  EXPECT_NEAR(bent.fit.slope * 8, 40.0, 2.0);
  EXPECT_EQ(bent.to_json(0.95)["predicted_removal_basis"],
            "removal step (one copy minus none, paired in rounds): known to the target precision");
  const auto linear = run_replicate_what_if(o, t, 8, 36, {}, synthetic(3.2, 3.2, 0.8));
  if (linear.removal_from_step) EXPECT_NEAR(linear.effect_ms(8), linear.removal_step_ms, 1e-12);
  else EXPECT_DOUBLE_EQ(linear.effect_ms(8), linear.fit.slope * 8);
  EXPECT_NEAR(linear.effect_ms(8), 3.2, 1.0);
}

// A first copy that costs three times the next ones (a small latency-bound kernel: its input in L2
// and its launches queued behind each other from the second copy on) with a slope known within
// the first rounds: the spread copy counts predict the removal 2.7x too small, so the what-if goes
// on with rounds of one copy and none until the step is known, and the step predicts the removal.
// A router's what-if as the families script runs it: 8 rounds, spread copy counts, no absolute floor.
WhatIfOptions router_options(double max_seconds) {
  WhatIfOptions o;
  o.rounds = 8;
  o.max_seconds = max_seconds;
  o.copies = {0, 1, 4, 8};
  o.target_absolute_half_width_ms = 0;
  return o;
}
const WhatIfTarget kRouter{"router", Edge::end, DelayKind::device, WhatIfMethod::replicate};

TEST(WhatIf, StepRoundsFollowWhenTheSlopeIsKnownBeforeTheStep) {
  const WhatIfOptions o = router_options(30);
  const WhatIfTarget& t = kRouter;
  std::mt19937_64 rng(5);
  int zero_one_stacks = 0, stacks = 0;
  auto stack = [&](int k) {
    ++stacks;
    if (k <= 1) ++zero_one_stacks;
    std::normal_distribution<double> eps(0, 0.02);
    return 3.6 + (k > 0 ? 4 * (0.045 + (k - 1) * 0.017) : 0.0) + eps(rng);  // 4 instances per stack
  };
  int meter_reads = 0;  // the energy meter is read around every timed stack, step rounds included
  const auto r = run_replicate_what_if(o, t, 4, 48, {}, stack, nullptr, {}, [&] { return double(++meter_reads); });
  EXPECT_EQ(meter_reads, 2 * static_cast<int>(4 * r.fit.blocks + 2 * r.step_only_ms.size()));
  EXPECT_NEAR(r.fit.slope, 0.017 * 4 / 4, 0.003);  // ms per copy per stack / instances: the marginal copy
  EXPECT_FALSE(r.step_only_ms.empty());
  EXPECT_EQ(r.stop, "interval within target (slope, then step rounds)");
  EXPECT_TRUE(r.removal_from_step);
  EXPECT_NEAR(r.effect_ms(4), 4 * 0.045, 0.018);  // the first copy's cost, within 10%
  const auto ci = r.effect_ci(4, 0.95);
  EXPECT_LE(ci.high - ci.low, 2 * 0.1 * r.effect_ms(4) + 1e-12);
  EXPECT_GT(zero_one_stacks, stacks / 2);  // the step rounds time only one copy and none
}

// The time cap before the step is known to the target, with the step's interval clear of the
// slope (a router 0.7% of its stack, the first copy 1.3x a further one): the step predicts, with its
// wider interval, because the slope is shown to be biased for a removal. A linear component stopped
// the same way keeps the slope.
TEST(WhatIf, StepPredictsAtTheTimeCapWhereItExcludesTheSlope) {
  const WhatIfOptions o = router_options(6);
  const WhatIfTarget& t = kRouter;
  std::mt19937_64 rng(17);
  auto synthetic = [&](double first, double next) {
    return [&rng, first, next](int k) {
      std::normal_distribution<double> eps(0, 0.12);
      return 39.0 + (k > 0 ? 4 * (first + (k - 1) * next) : 0.0) + eps(rng);  // 4 instances per stack
    };
  };
  const auto bent = run_replicate_what_if(o, t, 4, 48, {}, synthetic(0.072, 0.055));
  ASSERT_EQ(bent.stop, "time cap (step rounds)");
  EXPECT_TRUE(bent.removal_from_step);
  EXPECT_EQ(bent.removal_step_reason, "its interval excludes the slope (a first copy costs other than a further one)");
  EXPECT_FALSE(bent.removal_step_ci.contains(bent.fit.slope * 4));
  EXPECT_TRUE(bent.effect_ci(4, 0.95).contains(4 * 0.072))  // the first copy's cost, not the slope's
      << bent.effect_ms(4) << " [" << bent.effect_ci(4, 0.95).low << ", " << bent.effect_ci(4, 0.95).high << "]";
  const auto linear = run_replicate_what_if(o, t, 4, 48, {}, synthetic(0.055, 0.055));
  if (linear.removal_step_ci.contains(linear.fit.slope * 4) && linear.removal_step_reason.empty()) {
    EXPECT_DOUBLE_EQ(linear.effect_ms(4), linear.fit.slope * 4);
  }
  EXPECT_NEAR(linear.effect_ms(4), 4 * 0.055, 0.04);
}

TEST(WhatIf, ReplicationStopsAtTheTimeCap) {
  WhatIfOptions o;
  o.rounds = 2;
  o.resamples = 2000;
  o.max_seconds = 0.05;
  o.target_relative_half_width = 1e-9;
  o.target_absolute_half_width_ms = 0;
  const WhatIfTarget t{"noisy", Edge::end, DelayKind::device, WhatIfMethod::replicate};
  std::uint64_t seed = 1;
  auto stack = [&](int k) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return 5.0 + k * 0.1 + static_cast<double>(seed >> 40) * 1e-8;  // ms, never exactly linear
  };
  const auto r = run_replicate_what_if(o, t, 2, 36, {}, stack);
  EXPECT_EQ(r.stop, "time cap");
  EXPECT_GE(r.fit.blocks, 2u);
  EXPECT_LE(r.fit.blocks, 4u);  // 5 ms stacks, 4 per round: the 50 ms cap ends the third round
}

TEST(WhatIf, InjectedDelaysActOnTheirComponentAndEdge) {
  auto dev = make_host_device();
  InjectedDelays d(*dev);
  d.set("x", Edge::end, DelayKind::host, 200);
  d.set("y", Edge::begin, DelayKind::device, 100);  // the host device spins on the host
  d.set("x", Edge::end, DelayKind::host, 300);      // replaces the first
  const auto t0 = std::chrono::steady_clock::now();
  d.at("x", Edge::end, {});
  d.at("x", Edge::begin, {});
  d.at("y", Edge::begin, {});
  d.at("z", Edge::end, {});
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(d.injected(), 2u);
  EXPECT_GE(us, 400.0);
  d.clear();
  d.at("x", Edge::end, {});
  EXPECT_EQ(d.injected(), 2u);
}

TEST(WhatIf, RoundsAreOrderBalanced) {
  // Over 2k rounds every level takes every position exactly twice.
  const std::size_t k = 4;
  std::map<std::pair<std::size_t, std::size_t>, int> seen;  // (level, position) -> count
  for (std::size_t r = 0; r < 2 * k; ++r) {
    const auto order = round_order(k, r);
    ASSERT_EQ(order.size(), k);
    for (std::size_t p = 0; p < k; ++p) ++seen[{order[p], p}];
  }
  for (std::size_t l = 0; l < k; ++l)
    for (std::size_t p = 0; p < k; ++p) EXPECT_EQ((seen[{l, p}]), 2) << l << "," << p;
}

TEST(WhatIf, ParsesTargetsAndRejectsBadOnes) {
  const std::vector<std::string> valid = {"a", "b", "x"};
  const auto t = parse_what_if("a,x@begin,b@end", valid, {"x"});
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[1].name(), "x@begin");
  EXPECT_EQ(t[1].kind, DelayKind::host);
  EXPECT_EQ(t[0].kind, DelayKind::device);
  EXPECT_EQ(t[2].edge, Edge::end);
  for (const char* bad : {"", "a,,b", "zzz", "a@middle", "a,a"}) EXPECT_THROW(parse_what_if(bad, valid, {}), UsageError) << bad;
  WhatIfOptions o;
  EXPECT_NO_THROW(validate_what_if(o));
  o.levels_us = {5, 5};
  EXPECT_THROW(validate_what_if(o), UsageError);
  o.levels_us = {0, -1};
  EXPECT_THROW(validate_what_if(o), UsageError);
  o.levels_us = {0, 10};
  o.rounds = 1;
  EXPECT_THROW(validate_what_if(o), UsageError);
}

}  // namespace
// Microsecond stacks never add up to the time cap: the round cap stops them (the same on every rank).
TEST(WhatIf, ReplicationStopsAtTheRoundCap) {
  WhatIfOptions o;
  o.rounds = 2;
  o.max_rounds = 12;
  o.resamples = 500;
  o.max_seconds = 60;
  o.target_relative_half_width = 1e-9;
  o.target_absolute_half_width_ms = 0;
  const WhatIfTarget t{"tiny", Edge::end, DelayKind::device, WhatIfMethod::replicate};
  std::uint64_t seed = 7;
  auto stack = [&](int k) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return 0.002 + k * 0.0001 + static_cast<double>(seed >> 40) * 1e-10;  // ms: 2 us stacks
  };
  const auto r = run_replicate_what_if(o, t, 2, 36, {}, stack);
  EXPECT_EQ(r.stop, "round cap");
  EXPECT_EQ(r.fit.blocks, 12u);
}

}  // namespace layerbench::harness
