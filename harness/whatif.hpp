#pragma once
// What-if (critical-path) profiles. Inside a timed stack, an extra delay d is injected at every
// instance of one component (a spin kernel on its stream, or a host busy-wait), at several
// levels; the slope of stack time against the total injected time is the fraction of that
// component's time on the critical path (1: every injected microsecond shows up end to end;
// 0: it is hidden behind other work). Each level's delay is first calibrated alone; rounds
// visit the levels in an order-balanced sequence (like the A/B's alternation), and the slope
// is fitted within rounds by the stats engine (stats/slope.hpp), with its interval, the level
// residuals and a lack-of-fit test of linearity.
//
// The predicted end-to-end effect of removing the component = fraction x its isolated cost x
// its instances per forward. It assumes that shortening behaves like lengthening: where a
// second path is nearly as long, removing the component saves less than predicted.
#include "collectives/communicator.hpp"
#include "collectives/delay.hpp"
#include "collectives/telemetry.hpp"
#include "stats/common.hpp"
#include "stats/slope.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace layerbench::harness {

struct WhatIfOptions {
  std::vector<double> levels_us = {0, 10, 20, 40};
  int rounds = 8;                // each visits every level once (after one untimed round)
  int calibration_reps = 20;     // delays timed back to back per level when calibrating
  double confidence = 0.95;
  std::size_t resamples = 20000;
  std::uint64_t seed = stats::default_bootstrap_seed;
};

// Throws UsageError naming the flag: at least 2 distinct levels, all >= 0, rounds >= 2.
void validate_what_if(const WhatIfOptions& o);

// One component to delay: its name, the edge of the component the delay sits at, and how.
struct WhatIfTarget {
  std::string component;
  Edge edge = Edge::end;
  DelayKind kind = DelayKind::device;
  std::string name() const;  // "component", or "component@begin" for the begin edge
};

// "a,b@begin,c@end" -> targets; names must be in `valid` (UsageError naming --what-if).
// `host_components` get a host wait, the others a device spin.
std::vector<WhatIfTarget> parse_what_if(const std::string& list, const std::vector<std::string>& valid,
                                        const std::vector<std::string>& host_components);

// The order of the levels in round r: a rotation by r/2, reversed on odd rounds, so that
// every level takes every position and follows every other level equally often over rounds.
std::vector<std::size_t> round_order(std::size_t levels, std::size_t round);

struct WhatIfResult {
  WhatIfTarget target;
  int instances_per_stack = 0, instances_per_forward = 0;
  std::vector<double> levels_us, calibrated_ms;  // per instance, measured alone
  std::vector<double> x_ms, y_ms;                // total injected per stack, stack time
  std::vector<std::size_t> round, level;
  std::vector<double> level_clock_mhz, level_power_capped;  // telemetry per level (NaN without)
  stats::BlockSlopeFit fit;                      // slope = critical-path fraction
  double cost_ms = stats::nan_value;             // isolated cost: median of the profile's samples
  stats::Interval cost_ci;
  std::vector<double> cost_resampled;            // bootstrap medians of the cost
  double seconds = 0;                            // wall time of this what-if

  // fraction x cost x instances, with the percentile interval of the product of the
  // bootstrapped fraction and cost.
  double effect_ms(double instances) const { return fit.slope * cost_ms * instances; }
  stats::Interval effect_ci(double instances, double confidence) const;
  nlohmann::json to_json(double confidence) const;
};

// Runs one what-if. `calibrate(us)` times the delay alone and returns ms per instance;
// `stack(us)` runs one timed stack with the delay set to `us` and returns its time in ms
// (rank-max: both are collective on every rank). `cost_samples_ms` are the component's
// isolated samples. `sampler` (may be null) adds the SM clock and power-capped share per level.
WhatIfResult run_what_if(const WhatIfOptions& o, const WhatIfTarget& target, int instances_per_stack,
                         int instances_per_forward, const std::vector<double>& cost_samples_ms,
                         const std::function<double(double)>& calibrate, const std::function<double(double)>& stack,
                         const telemetry::Sampler* sampler = nullptr,
                         const std::function<void(int round, int rounds)>& on_round = {});

// The what-if table (markdown), titled with `label` when given, and the notes under it.
std::string what_if_markdown(const std::vector<WhatIfResult>& results, double confidence, const std::string& label = "",
                             bool notes = true);
std::string what_if_notes();  // how to read the table

// Calibration helpers: ms per delay of `reps` back-to-back delays alone.
double calibrate_device_spin(Device& dev, Stream s, double us, int reps);
double calibrate_host_spin(double us, int reps);

// The two callbacks of run_what_if as every driver writes them (collective on `comm`; `s` is the
// compute stream of comm's device). calibrate_delay: the target's kind of delay (host wait or
// device spin) timed alone, rank-max. time_stack: clears `delays`, sets `us` on the target,
// synchronises `s` and the ranks, times `body` (the stack's forwards on `s`) up to a
// synchronisation of `s`; `ms` is the rank-max wall time, `injected` the delays this rank applied.
double calibrate_delay(Communicator& comm, Stream s, const WhatIfTarget& target, double us, int reps);
struct StackTime {
  double ms = 0;
  std::size_t injected = 0;
};
StackTime time_stack(Communicator& comm, Stream s, InjectedDelays& delays, const WhatIfTarget& target, double us,
                     const std::function<void()>& body);

}  // namespace layerbench::harness
