#include "harness/whatif.hpp"
#include "common/json_number.hpp"
#include "harness/interleave.hpp"

#include "collectives/error.hpp"
#include "stats/bootstrap.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <sstream>
#include <utility>

namespace layerbench::harness {

std::optional<stats::BlockSlopeFit> fit_energy(const WhatIfResult& r, const stats::BlockSlopeOptions& so) {
  if (r.energy_j.size() != r.x_ms.size() || r.energy_j.empty()) return std::nullopt;
  for (double e : r.energy_j)
    if (!std::isfinite(e)) return std::nullopt;
  stats::BlockSlopeOptions eo = so;
  eo.keep_resamples = false;
  try {
    return stats::fit_block_slope(r.x_ms, r.energy_j, r.round, r.level, eo);
  } catch (const std::exception&) {
    return std::nullopt;  // e.g. a counter that did not move: no spread to fit
  }
}

void validate_what_if(const WhatIfOptions& o) {
  std::set<double> distinct;
  for (double v : o.levels_us) {
    if (!(v >= 0) || !std::isfinite(v) || v > 1e6)
      throw UsageError(fmt::format("--what-if-levels: {} is not a delay in [0, 1e6] us", v));
    distinct.insert(v);
  }
  if (distinct.size() < 2) throw UsageError("--what-if-levels needs at least 2 distinct levels");
  if (distinct.size() != o.levels_us.size()) throw UsageError("--what-if-levels: a level is repeated");
  if (o.rounds < 2) throw UsageError("--what-if-rounds must be at least 2");
  if (o.calibration_reps < 1) throw UsageError("the what-if calibration needs at least 1 repetition");
}

std::string to_string(WhatIfMethod m) { return m == WhatIfMethod::replicate ? "replicate" : "delay"; }

std::string WhatIfTarget::name() const { return edge == Edge::begin ? component + "@begin" : component; }

std::vector<WhatIfTarget> parse_what_if(const std::string& list, const std::vector<std::string>& valid,
                                        const std::vector<std::string>& host_components) {
  std::vector<WhatIfTarget> out;
  std::stringstream in(list);
  std::string item;
  auto known = [&](const std::string& n) { return std::find(valid.begin(), valid.end(), n) != valid.end(); };
  while (std::getline(in, item, ',')) {
    if (item.empty()) throw UsageError(fmt::format("--what-if '{}': empty component name", list));
    WhatIfTarget t;
    const auto at = item.find('@');
    t.component = item.substr(0, at);
    if (at != std::string::npos) {
      const auto e = item.substr(at + 1);
      if (e == "begin") t.edge = Edge::begin;
      else if (e != "end") throw UsageError(fmt::format("--what-if {}: the edge must be @begin or @end", item));
    }
    if (!known(t.component)) {
      std::string names;
      for (const auto& v : valid) names += (names.empty() ? "" : ", ") + v;
      throw UsageError(fmt::format("--what-if: unknown component '{}' (one of: {})", t.component, names));
    }
    const bool host = std::find(host_components.begin(), host_components.end(), t.component) != host_components.end();
    t.kind = host ? DelayKind::host : DelayKind::device;
    for (const auto& o : out)
      if (o.name() == t.name()) throw UsageError(fmt::format("--what-if: {} given twice", t.name()));
    out.push_back(t);
  }
  if (out.empty()) throw UsageError("--what-if: no component given");
  return out;
}

std::vector<std::size_t> round_order(std::size_t levels, std::size_t round) {
  std::vector<std::size_t> order(levels);
  const std::size_t shift = (round / 2) % levels;
  for (std::size_t i = 0; i < levels; ++i) order[i] = (i + shift) % levels;
  if (round % 2 == 1) std::reverse(order.begin(), order.end());
  return order;
}

double time_with_telemetry(const std::function<double()>& stack, const std::function<double()>& energy_j,
                           const telemetry::Sampler* sampler, double* joules, std::vector<telemetry::Sample>* samples) {
  const double t0 = telemetry::Sampler::now();
  const double e0 = energy_j ? energy_j() : stats::nan_value;
  const double ms = stack();
  const double e1 = energy_j ? energy_j() : stats::nan_value;
  if (joules) *joules = e1 - e0;
  if (sampler && samples) {
    auto w = sampler->between(t0, telemetry::Sampler::now());
    samples->insert(samples->end(), w.begin(), w.end());
  }
  return ms;
}

double calibrate_device_spin(Device& dev, Stream s, double us, int reps) {
  for (int i = 0; i < 3; ++i) dev.spin(s, us);  // first launches load the kernel
  dev.synchronize(s);
  std::vector<double> per;
  auto timer = dev.make_timer();
  for (int r = 0; r < 7; ++r) {
    timer->start(s);
    for (int i = 0; i < reps; ++i) dev.spin(s, us);
    timer->stop(s);
    per.push_back(timer->elapsed_ms() / reps);
  }
  return stats::summarize(per).median;
}

double calibrate_host_spin(double us, int reps) {
  using clock = std::chrono::steady_clock;
  std::vector<double> per;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = clock::now();
    for (int i = 0; i < reps; ++i) host_spin(us);
    per.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count() / reps);
  }
  return stats::summarize(per).median;
}

double calibrate_delay(Communicator& comm, Stream s, const WhatIfTarget& target, double us, int reps) {
  double ms = target.kind == DelayKind::host ? calibrate_host_spin(us, reps)
                                             : calibrate_device_spin(comm.device(), s, us, reps);
  comm.control_max(std::span<double>(&ms, 1));
  return ms;
}

double time_body(Communicator& comm, Stream s, const std::function<void()>& body) {
  Device& dev = comm.device();
  dev.synchronize(s);
  comm.control_barrier();
  const auto t0 = std::chrono::steady_clock::now();
  body();
  dev.synchronize(s);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  comm.control_max(std::span<double>(&ms, 1));
  return ms;
}

std::optional<WhatIfResult> run_delay_what_if(Communicator& comm, Stream s, InjectedDelays& delays,
                                              const WhatIfOptions& o, const WhatIfTarget& target,
                                              int instances_per_forward, const std::vector<double>& cost_samples_ms,
                                              const std::function<void()>& body, const telemetry::Sampler* sampler,
                                              const std::function<void(int, int)>& on_round,
                                              const std::function<double()>& energy_j) {
  std::size_t count = 0;
  auto stack = [&](double us) {
    const auto r = time_stack(comm, s, delays, target, us, body);
    count = r.injected;
    return r.ms;
  };
  (void)stack(0);  // counts the instances; a component this stack skips has none
  double n = static_cast<double>(count);
  comm.control_max(std::span<double>(&n, 1));
  if (n == 0) return std::nullopt;
  const int instances = static_cast<int>(n);
  auto checked = [&](double us) {
    const double ms = stack(us);
    LB_CHECK(count == static_cast<std::size_t>(instances), "the stack ran its delayed component a different number of times");
    return ms;
  };
  auto calibrate = [&](double us) { return calibrate_delay(comm, s, target, us, o.calibration_reps); };
  return run_what_if(o, target, instances, instances_per_forward, cost_samples_ms, calibrate, checked, sampler,
                     on_round, energy_j);
}

StackTime time_stack(Communicator& comm, Stream s, InjectedDelays& delays, const WhatIfTarget& target, double us,
                     const std::function<void()>& body) {
  Device& dev = comm.device();
  delays.clear();
  delays.set(target.component, target.edge, target.kind, us);
  dev.synchronize(s);
  comm.control_barrier();
  const auto n0 = delays.injected();
  const auto t0 = std::chrono::steady_clock::now();
  body();
  dev.synchronize(s);
  StackTime t;
  t.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  t.injected = delays.injected() - n0;
  comm.control_max(std::span<double>(&t.ms, 1));
  return t;
}

WhatIfResult run_what_if(const WhatIfOptions& o, const WhatIfTarget& target, int instances_per_stack,
                         int instances_per_forward, const std::vector<double>& cost_samples_ms,
                         const std::function<double(double)>& calibrate, const std::function<double(double)>& stack,
                         const telemetry::Sampler* sampler, const std::function<void(int, int)>& on_round,
                         const std::function<double()>& energy_j) {
  LB_CHECK(instances_per_stack > 0, "a what-if needs at least one instance per stack");
  const auto t_start = std::chrono::steady_clock::now();
  WhatIfResult r;
  r.target = target;
  r.instances_per_stack = instances_per_stack;
  r.instances_per_forward = instances_per_forward;
  r.levels_us = o.levels_us;
  const std::size_t k = o.levels_us.size();
  // Each level is calibrated alone before and after the rounds; x uses the mean of the two.
  for (double us : o.levels_us) r.calibrated_ms.push_back(calibrate(us));

  NeighbourPrimer primer(o.prime_stacks);
  for (std::size_t i = 0; i < k; ++i)  // untimed round: warm every level
    primer.ran(static_cast<int>(i), stack(o.levels_us[i]));
  std::vector<std::vector<telemetry::Sample>> level_samples(k);
  for (int round = 0; round < o.rounds; ++round) {
    if (on_round) on_round(round, o.rounds);
    for (std::size_t l : round_order(k, static_cast<std::size_t>(round))) {
      double joules = stats::nan_value;
      auto one = [&] { return stack(o.levels_us[l]); };
      const double ms = primer.run(static_cast<int>(l), one,
                                   [&] { return time_with_telemetry(one, energy_j, sampler, &joules, &level_samples[l]); });
      r.energy_j.push_back(joules);
      r.x_ms.push_back(0);  // set from the calibrations below
      r.y_ms.push_back(ms);
      r.round.push_back(static_cast<std::size_t>(round));
      r.level.push_back(l);
    }
  }
  r.primed_stacks = primer.primed();
  r.prime_stacks = primer.prime_stacks();
  for (std::size_t l = 0; l < k; ++l) r.calibrated_ms[l] = 0.5 * (r.calibrated_ms[l] + calibrate(o.levels_us[l]));
  for (std::size_t i = 0; i < r.x_ms.size(); ++i) r.x_ms[i] = r.calibrated_ms[r.level[i]] * instances_per_stack;
  for (std::size_t l = 0; l < k; ++l) {
    const auto s = telemetry::summarize(level_samples[l]);
    r.level_clock_mhz.push_back(s.sm_clock_mean_mhz);
    r.level_power_capped.push_back(s.power_capped_share);
  }

  stats::BlockSlopeOptions so;
  so.confidence = o.confidence;
  so.resamples = o.resamples;
  so.seed = o.seed;
  so.keep_resamples = true;
  r.fit = stats::fit_block_slope(r.x_ms, r.y_ms, r.round, r.level, so);
  r.slope_median = stats::median_block_slope(r.x_ms, r.y_ms, r.round);
  r.energy_fit = fit_energy(r, so);
  if (!cost_samples_ms.empty()) {
    r.cost_ms = stats::summarize(cost_samples_ms).median;
    r.cost_resampled = stats::resampled_medians(cost_samples_ms, o.resamples, o.seed + 1);
    std::vector<double> tmp = r.cost_resampled;
    r.cost_ci = stats::percentile_interval(tmp, o.confidence, stats::Alternative::two_sided);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return r;
}

stats::Interval WhatIfResult::effect_ci(double instances, double confidence) const {
  if (target.method == WhatIfMethod::replicate) {
    const auto sci = slope_ci();
    stats::Interval ci{sci.low * instances, sci.high * instances};
    if (removal_from_step) {
      const double f = instances / instances_per_stack;
      ci = {removal_step_ci.low * f, removal_step_ci.high * f};
    }
    if (ci.low > ci.high) std::swap(ci.low, ci.high);
    return ci;
  }
  if (cost_resampled.empty() || fit.resampled.size() != cost_resampled.size()) return {};
  auto ci = stats::product_interval(fit.resampled, cost_resampled, confidence);
  ci.low *= instances;
  ci.high *= instances;
  if (ci.low > ci.high) std::swap(ci.low, ci.high);
  return ci;
}

}  // namespace layerbench::harness
