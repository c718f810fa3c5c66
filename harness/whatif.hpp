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
// Two methods (WhatIfMethod), one table:
//   delay: the slope is the response of the stack to idle of the component's length (the
//     "critical-path fraction"); predicted removal = fraction x isolated cost x instances per
//     forward. Right for idle work (a host round-trip, a wait). Wrong for compute on a
//     power-capped GPU: idle lowers the average power, so the clocks rise in the rest of the
//     stack and the fraction reads well below 1 for serial kernels, while removing a kernel
//     removes its energy too (measured on an H200: idle predicted 0.63-0.85x of a kernel's
//     removal, replication 0.94-1.05x).
//   replicate: the component runs k = 0 (where it can be skipped), 1, 2, 3 times per instance;
//     the slope of stack time against copies per stack is its in-situ cost (ms per copy, at
//     the clocks the stack runs at); predicted removal = slope x instances per forward and
//     "X% faster" = X% x slope. Rounds continue until the slope's 95% interval is within
//     10% of it (0.02 ms absolute for components under 0.2 ms), or the time cap.
// Either way the stack's energy (NVML's total-energy counter, when present) is fitted against
// the same x: joules per extra copy (replicate) or per injected millisecond (delay).
#include "collectives/communicator.hpp"
#include "collectives/delay.hpp"
#include "collectives/telemetry.hpp"
#include "reports/document.hpp"
#include "stats/common.hpp"
#include "stats/slope.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace layerbench::harness {

enum class WhatIfMethod { delay, replicate };
std::string to_string(WhatIfMethod m);

struct WhatIfOptions {
  std::vector<double> levels_us = {0, 10, 20, 40};
  int rounds = 8;                // each visits every level once (after one untimed round); replicate: the minimum
  // Replication: the copies per instance (0 only where the component can be skipped), the
  // stopping rule (relative half-width of the slope's interval, the absolute floor in ms for
  // small components) and the time cap per component.
  std::vector<int> copies = {0, 1, 2, 3};
  double target_relative_half_width = 0.10;
  double target_absolute_half_width_ms = 0.02;
  double max_seconds = 60;
  // Replication: a cap on rounds as well. The time cap counts the stacks' own time (the same on
  // every rank); a component of microseconds would otherwise run thousands of rounds, each with
  // a fit, before its stacks add up to the cap.
  int max_rounds = 400;
  // Untimed stacks of the same level run before a timed stack whose neighbour ran another level,
  // at least this many and for at least as long as that neighbour ran (harness/interleave.hpp: on
  // a power-capped GPU a stack's time depends on the stacks before it); 0 = off. The time cap
  // counts them.
  int prime_stacks = 1;
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
  WhatIfMethod method = WhatIfMethod::delay;
  std::string name() const;  // "component", or "component@begin" for the begin edge
};

// "a,b@begin,c@end" -> targets; names must be in `valid` (UsageError naming --what-if).
// `host_components` get a host wait, the others a device spin.
std::vector<WhatIfTarget> parse_what_if(const std::string& list, const std::vector<std::string>& valid,
                                        const std::vector<std::string>& host_components);

// The order of the levels in round r: a rotation by r/2, reversed on odd rounds, so that
// every level takes every position equally often over 2 x levels rounds. It does not balance
// neighbours (with 4 levels, level l follows l - 1 or l + 1 within a round, never l + 2): the
// rounds prime every timed stack with one of its own level instead (harness/interleave.hpp).
std::vector<std::size_t> round_order(std::size_t levels, std::size_t round);

// One timed stack of the rounds: `stack()`'s ms, with the energy meter read around it (the joules
// into *joules, NaN without a meter) and the sampler's window appended to *samples (either pointer
// may be null, as may the meter and the sampler).
double time_with_telemetry(const std::function<double()>& stack, const std::function<double()>& energy_j,
                           const telemetry::Sampler* sampler, double* joules, std::vector<telemetry::Sample>* samples);

struct WhatIfResult {
  WhatIfTarget target;
  int instances_per_stack = 0, instances_per_forward = 0;
  std::vector<double> levels_us, calibrated_ms;  // delay: per instance, measured alone
  std::vector<int> copies;                       // replicate: copies per instance by level
  std::vector<double> x_ms, y_ms;                // delay: total injected ms per stack; replicate: copies per stack
  std::vector<double> energy_j;                  // per observation (NaN without an energy counter)
  std::vector<std::size_t> round, level;
  std::vector<double> level_clock_mhz, level_power_capped;  // telemetry per level (NaN without)
  stats::BlockSlopeFit fit;                      // delay: critical-path fraction; replicate: ms per copy
  double slope_median = stats::nan_value;        // median over rounds of each round's own slope
  std::optional<stats::BlockSlopeFit> energy_fit;  // J per copy (replicate) / per injected ms (delay)
  std::string stop;                              // replicate: why the rounds stopped
  // replicate with k = 0: the removal step measured inside the rounds (stack time at one copy
  // minus at none, per stack, paired within rounds; t interval): the same unit a removal A/B
  // takes away. It predicts the removal wherever its interval is within the stopping rule's
  // target, or where the linearity test fails (lack-of-fit p < 0.01: under a power cap a
  // component whose power density differs from the rest's is not linear at k = 0, removing it
  // moves the clocks of everything else), or where its interval excludes the slope's point per
  // stack (a first copy shown to cost other than a further one); elsewhere the slope does.
  double removal_step_ms = stats::nan_value;
  stats::Interval removal_step_ci;
  // Step rounds: once the slope is known to the target and the step is not, rounds that time only
  // k = 1 and k = 0 (in alternating order), their differences kept here, out of the slope's fit
  // (a first copy may cost more than the next ones: x in L2, launches queued behind each other).
  std::vector<double> step_only_ms;
  bool removal_from_step = false;
  std::string removal_step_reason;  // why the step predicts the removal ("" when the slope does)
  int prime_stacks = 0;                          // untimed stacks per change of level (0 = off)
  std::size_t primed_stacks = 0;                 // untimed stacks run for that
  double cost_ms = stats::nan_value;             // isolated cost: median of the profile's samples
  stats::Interval cost_ci;
  std::vector<double> cost_resampled;            // bootstrap medians of the cost
  double seconds = 0;                            // wall time of this what-if

  // The slope's interval. replicate: the t interval over rounds (stats/slope.hpp block_t_ci:
  // each round is one independent pass over every copy count; with the 8-12 rounds the stopping
  // rule takes, the bootstrap percentile over rounds covers ~88%, not 95%). delay: the bootstrap
  // percentile, whose resamples also give the product with the bootstrapped cost.
  stats::Interval slope_ci() const { return target.method == WhatIfMethod::replicate ? fit.block_t_ci : fit.ci; }
  std::string slope_ci_method() const {
    return target.method == WhatIfMethod::replicate ? "t over rounds (df = rounds - 1)" : "bootstrap percentile over rounds";
  }

  // delay: fraction x cost x instances, with the percentile interval of the product of the
  // bootstrapped fraction and cost. replicate: slope x instances, slope_ci() scaled.
  // replicate: the predicted removal uses the removal step instead when removal_from_step.
  double effect_ms(double instances) const {
    if (target.method == WhatIfMethod::replicate)
      return removal_from_step ? removal_step_ms / instances_per_stack * instances : fit.slope * instances;
    return fit.slope * cost_ms * instances;
  }
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
                         const std::function<void(int round, int rounds)>& on_round = {},
                         const std::function<double()>& energy_j = {});

// Runs one replication what-if: `stack(k)` runs one timed stack with the component run k times
// per instance and returns its time in ms (rank-max, collective). `energy_j` (may be empty) is a
// collective cumulative energy meter (J over the ranks' devices; NaN when there is none), read
// around every stack. Rounds visit o.copies in the order-balanced sequence; at least o.rounds,
// then until the stopping rule holds or o.max_seconds pass.
WhatIfResult run_replicate_what_if(const WhatIfOptions& o, const WhatIfTarget& target, int instances_per_stack,
                                   int instances_per_forward, const std::vector<double>& cost_samples_ms,
                                   const std::function<double(int)>& stack, const telemetry::Sampler* sampler = nullptr,
                                   const std::function<void(int round, int rounds)>& on_round = {},
                                   const std::function<double()>& energy_j = {});
// The removal step of a replication result (fills removal_step_ms / _ci, removal_from_step and
// its reason; the precision target is the stopping rule's, from `o`).
void fit_removal_step(WhatIfResult& r, const WhatIfOptions& o);

// The energy slope of a result's observations (nullopt without finite energies).
std::optional<stats::BlockSlopeFit> fit_energy(const WhatIfResult& r, const stats::BlockSlopeOptions& so);

// The stopping rule's target half-width for a slope (and the component's isolated cost, NaN if
// unknown): 10% of the slope, or the absolute floor for a component under 0.2 ms.
double replicate_target_half_width(const WhatIfOptions& o, double slope_ms, double cost_ms);

// The what-if table as a section ("What-if[, label]: stack of N instances"), with the notes on
// reading it when `notes`; an empty section for no results.
reports::Section what_if_section(const std::vector<WhatIfResult>& results, double confidence,
                                 const std::string& label = "", bool notes = true);
// Its markdown (reports::to_markdown, level-3 heading) after a blank line; "" for no results.
std::string what_if_markdown(const std::vector<WhatIfResult>& results, double confidence, const std::string& label = "",
                             bool notes = true);
std::vector<std::string> what_if_note_list();  // how to read the table, one bullet each
std::string what_if_notes();                   // the same as markdown bullets after a blank line

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
// The same without delays: synchronise `s` and the ranks, time `body` up to a synchronisation
// of `s`; rank-max ms.
double time_body(Communicator& comm, Stream s, const std::function<void()>& body);

// The delay what-if of `target` as every driver runs it: installs nothing (the caller's layer
// already calls `delays`), counts the instances of one stack at delay 0 (none: nullopt, the
// stack does not run the component), calibrates the target's delay alone and times `body` (the
// stack's forwards on `s`) at every level. Collective.
std::optional<WhatIfResult> run_delay_what_if(Communicator& comm, Stream s, InjectedDelays& delays,
                                              const WhatIfOptions& o, const WhatIfTarget& target,
                                              int instances_per_forward, const std::vector<double>& cost_samples_ms,
                                              const std::function<void()>& body,
                                              const telemetry::Sampler* sampler = nullptr,
                                              const std::function<void(int, int)>& on_round = {},
                                              const std::function<double()>& energy_j = {});

}  // namespace layerbench::harness
