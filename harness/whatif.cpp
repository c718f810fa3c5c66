#include "harness/whatif.hpp"
#include "common/json_number.hpp"

#include "collectives/error.hpp"
#include "stats/bootstrap.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <sstream>

namespace layerbench::harness {

namespace {
using nlohmann::json;
nlohmann::json num(double v) { return finite_or_null(v); }  // common/json_number.hpp
json ci_json(const stats::Interval& i) { return json::array({num(i.low), num(i.high)}); }
}  // namespace

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
                         const telemetry::Sampler* sampler, const std::function<void(int, int)>& on_round) {
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

  for (std::size_t i = 0; i < k; ++i) (void)stack(o.levels_us[i]);  // untimed round: warm every level
  std::vector<std::vector<telemetry::Sample>> level_samples(k);
  for (int round = 0; round < o.rounds; ++round) {
    if (on_round) on_round(round, o.rounds);
    for (std::size_t l : round_order(k, static_cast<std::size_t>(round))) {
      const double t0 = telemetry::Sampler::now();
      const double ms = stack(o.levels_us[l]);
      if (sampler) {
        auto w = sampler->between(t0, telemetry::Sampler::now());
        level_samples[l].insert(level_samples[l].end(), w.begin(), w.end());
      }
      r.x_ms.push_back(0);  // set from the calibrations below
      r.y_ms.push_back(ms);
      r.round.push_back(static_cast<std::size_t>(round));
      r.level.push_back(l);
    }
  }
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
  if (cost_resampled.empty() || fit.resampled.size() != cost_resampled.size()) return {};
  auto ci = stats::product_interval(fit.resampled, cost_resampled, confidence);
  ci.low *= instances;
  ci.high *= instances;
  if (ci.low > ci.high) std::swap(ci.low, ci.high);
  return ci;
}

json WhatIfResult::to_json(double confidence) const {
  json levels = json::array();
  for (std::size_t l = 0; l < levels_us.size(); ++l) {
    levels.push_back({{"delay_us", levels_us[l]},
                      {"calibrated_ms_per_instance", calibrated_ms[l]},
                      {"mean_stack_ms_block_adjusted", l < fit.level_y.size() ? num(fit.level_y[l]) : json(nullptr)},
                      {"residual_ms", l < fit.level_residual.size() ? num(fit.level_residual[l]) : json(nullptr)},
                      {"sm_clock_mean_mhz", num(level_clock_mhz[l])},
                      {"power_capped_share", num(level_power_capped[l])}});
  }
  const double f = static_cast<double>(instances_per_forward);
  return {{"component", target.component},
          {"edge", target.edge == Edge::begin ? "begin" : "end"},
          {"delay", target.kind == DelayKind::host ? "host busy-wait" : "device spin kernel on the component's stream"},
          {"instances_per_stack", instances_per_stack},
          {"instances_per_forward", instances_per_forward},
          {"rounds", fit.blocks},
          {"levels", levels},
          {"critical_path_fraction", num(fit.slope)},
          {"critical_path_fraction_ci", ci_json(fit.ci)},
          {"critical_path_fraction_t_ci", ci_json(fit.t_ci)},
          {"linearity_max_residual_ms", num(fit.max_abs_residual)},
          {"lack_of_fit_p", num(fit.lack_of_fit_p)},
          {"isolated_cost_ms", num(cost_ms)},
          {"isolated_cost_ci_ms", ci_json(cost_ci)},
          {"predicted_removal_ms_per_forward", num(effect_ms(f))},
          {"predicted_removal_ci_ms_per_forward", ci_json(effect_ci(f, confidence))},
          {"observations", {{"x_ms", x_ms}, {"y_ms", y_ms}, {"round", round}, {"level", level}}},
          {"seconds", seconds}};
}

std::string what_if_markdown(const std::vector<WhatIfResult>& results, double confidence, const std::string& label,
                             bool notes) {
  if (results.empty()) return "";
  const int level = static_cast<int>(std::lround(100 * confidence));
  const auto& r0 = results.front();
  std::string levels;
  for (double v : r0.levels_us) levels += (levels.empty() ? "" : ", ") + fmt::format("{:g}", v);
  std::string md = fmt::format(
      "\n### What-if (critical path){}: delays of {} us at every instance, {} rounds (order-balanced), stack of {} "
      "instances\n\n",
      label.empty() ? "" : ", " + label, levels, r0.fit.blocks, r0.instances_per_stack);
  md += fmt::format("| component | delay | isolated cost ms | critical-path fraction ({}% CI) | per forward | "
                    "predicted removal ms/forward ({}% CI) | linearity: max residual ms (lack-of-fit p) | SM clock "
                    "MHz by level | time s |\n|---|---|---:|---|---:|---|---|---|---:|\n",
                    level, level);
  for (const auto& r : results) {
    const double f = static_cast<double>(r.instances_per_forward);
    const auto eci = r.effect_ci(f, confidence);
    std::string clocks;
    for (double c : r.level_clock_mhz) clocks += (clocks.empty() ? "" : " / ") + (std::isfinite(c) ? fmt::format("{:.0f}", c) : "-");
    md += fmt::format("| {} | {} | {:.4f} | {:.3f} [{:.3f}, {:.3f}] | {} | {:+.4f} [{:+.4f}, {:+.4f}] | {:.4f} ({}) | {} | {:.1f} |\n",
                      r.target.name(), r.target.kind == DelayKind::host ? "host wait" : "device spin", r.cost_ms,
                      r.fit.slope, r.fit.ci.low, r.fit.ci.high, r.instances_per_forward, r.effect_ms(f), eci.low,
                      eci.high, r.fit.max_abs_residual,
                      std::isfinite(r.fit.lack_of_fit_p) ? fmt::format("{:.3g}", r.fit.lack_of_fit_p) : "n/a", clocks,
                      r.seconds);
  }
  if (notes) md += what_if_notes();
  return md;
}

std::string what_if_notes() {
  std::string md;
  md += "\n- fraction = slope of stack time against the total injected delay (calibrated alone, per instance x "
        "instances per stack), fitted within rounds; 1 = on the critical path, 0 = hidden behind other work.\n";
  md += "- predicted removal = fraction x isolated cost x instances per forward; it assumes shortening behaves like "
        "lengthening (false where another path is nearly as long) and that the isolated cost is the time the "
        "component takes inside the stack.\n";
  md += "- a small lack-of-fit p (< 0.01) means the response is not linear in the delay (e.g. hidden up to a slack, "
        "then critical): read the fraction as an average over the levels.\n";
  md += "- on a power-capped GPU (see the telemetry) a component on the critical path reads below 1: the injected "
        "idle lets the clocks rise in the rest of the stack (the SM clock by level shows it). Removing the work "
        "meets the same response, so the prediction keeps it; the fraction is then not a pure critical-path share.\n";
  return md;
}

}  // namespace layerbench::harness
