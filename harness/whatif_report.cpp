// The what-if results as JSON and as one report section (a table of both methods, the method per
// row, and the notes on reading it), printed by the markdown printer.
#include "harness/whatif.hpp"
#include "common/number_text.hpp"
#include "reports/document.hpp"

#include <fmt/format.h>

#include <cmath>

namespace layerbench::harness {

namespace {
using nlohmann::json;
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json ci_json(const stats::Interval& i) { return json::array({num(i.low), num(i.high)}); }
double half_width(double v, const stats::Interval& ci) {
  return std::isfinite(ci.low) ? std::max(v - ci.low, ci.high - v) : stats::nan_value;
}
}  // namespace

json WhatIfResult::to_json(double confidence) const {
  const bool rep = target.method == WhatIfMethod::replicate;
  json levels = json::array();
  const std::size_t k = rep ? copies.size() : levels_us.size();
  for (std::size_t l = 0; l < k; ++l) {
    json e = {{"mean_stack_ms_block_adjusted", l < fit.level_y.size() ? num(fit.level_y[l]) : json(nullptr)},
              {"residual_ms", l < fit.level_residual.size() ? num(fit.level_residual[l]) : json(nullptr)},
              {"sm_clock_mean_mhz", l < level_clock_mhz.size() ? num(level_clock_mhz[l]) : json(nullptr)},
              {"power_capped_share", l < level_power_capped.size() ? num(level_power_capped[l]) : json(nullptr)}};
    if (rep) {
      e["copies_per_instance"] = copies[l];
    } else {
      e["delay_us"] = levels_us[l];
      e["calibrated_ms_per_instance"] = calibrated_ms[l];
    }
    levels.push_back(e);
  }
  const double f = static_cast<double>(instances_per_forward);
  const auto eci = effect_ci(f, confidence);
  json energy = nullptr;
  if (energy_fit)
    energy = {{"unit", "J"},
              {"per", rep ? "extra copy of the component (all ranks' devices)" : "ms of injected idle (all ranks' devices)"},
              {"slope_j", num(energy_fit->slope)},
              {"slope_ci_j", ci_json(rep ? energy_fit->block_t_ci : energy_fit->ci)}};
  json j = {{"component", target.component},
            {"method", to_string(target.method)},
            {"instances_per_stack", instances_per_stack},
            {"instances_per_forward", instances_per_forward},
            {"rounds", fit.blocks},
            {"levels", levels},
            {"slope", num(fit.slope)},
            {"slope_ci", ci_json(slope_ci())},
            {"slope_ci_method", slope_ci_method()},
            {"slope_bootstrap_ci", ci_json(fit.ci)},
            {"slope_block_t_ci", ci_json(fit.block_t_ci)},
            {"slope_t_ci", ci_json(fit.t_ci)},
            {"slope_median_of_rounds", num(slope_median)},
            {"linearity_max_residual_ms", num(fit.max_abs_residual)},
            {"lack_of_fit_p", num(fit.lack_of_fit_p)},
            {"isolated_cost_ms", num(cost_ms)},
            {"isolated_cost_ci_ms", ci_json(cost_ci)},
            {"predicted_removal_ms_per_forward", num(effect_ms(f))},
            {"predicted_removal_ci_ms_per_forward", ci_json(eci)},
            {"predicted_removal_relative_half_width", num(half_width(effect_ms(f), eci) / std::fabs(effect_ms(f)))},
            {"energy", energy},
            {"observations", {{"x", x_ms}, {"y_ms", y_ms}, {"energy_j", json::array()}, {"round", round}, {"level", level}}},
            {"seconds", seconds},
            {"prime_stacks_per_change", prime_stacks},
            {"primed_stacks", primed_stacks}};
  for (double e : energy_j) j["observations"]["energy_j"].push_back(num(e));
  if (rep) {
    j["removal_step_ms_per_stack"] = num(removal_step_ms);
    j["removal_step_ci_ms_per_stack"] = ci_json(removal_step_ci);
    j["predicted_removal_basis"] =
        removal_from_step ? "removal step (one copy minus none, paired in rounds): " + removal_step_reason : "slope x instances";
    j["slope_unit"] = "ms per copy";
    j["x_unit"] = "copies per stack";
    j["stop"] = stop;
    j["step_rounds"] = step_only_ms.size();
    j["step_only_ms_per_stack"] = step_only_ms;
  } else {
    j["edge"] = target.edge == Edge::begin ? "begin" : "end";
    j["delay"] = target.kind == DelayKind::host ? "host busy-wait" : "device spin kernel on the component's stream";
    j["slope_unit"] = "critical-path fraction (ms of stack per ms injected)";
    j["x_unit"] = "ms injected per stack";
  }
  return j;
}

namespace {

std::vector<std::string> what_if_row(const WhatIfResult& r, double confidence) {
  const bool rep = r.target.method == WhatIfMethod::replicate;
  const double f = static_cast<double>(r.instances_per_forward);
  const auto eci = r.effect_ci(f, confidence);
  const double eff = r.effect_ms(f);
  std::string levels, clocks;
  if (rep)
    for (int c : r.copies) levels += (levels.empty() ? "" : ", ") + fmt::format("x{}", c);
  else
    for (double v : r.levels_us) levels += (levels.empty() ? "" : ", ") + fmt::format("{:g} us", v);
  for (double c : r.level_clock_mhz) clocks += (clocks.empty() ? "" : " / ") + (std::isfinite(c) ? fmt::format("{:.0f}", c) : "-");
  const auto sci = r.slope_ci();
  const std::string slope = fmt::format("{} [{}, {}] {}", text::number(r.fit.slope, 4), text::number(sci.low, 4),
                                        text::number(sci.high, 4), rep ? "ms/copy" : "fraction");
  std::string energy = text::kNotAvailable;
  if (r.energy_fit) {
    const auto& jci = rep ? r.energy_fit->block_t_ci : r.energy_fit->ci;
    energy = fmt::format("{} [{}, {}]", text::number(r.energy_fit->slope, 3), text::number(jci.low, 3),
                         text::number(jci.high, 3));
  }
  const std::string method = rep ? "replicate" : (r.target.kind == DelayKind::host ? "delay (host wait)" : "delay (device spin)");
  return {r.target.name(),
          method,
          levels,
          fmt::format("{:.4f}", r.cost_ms),
          slope,
          fmt::format("{}", r.instances_per_forward),
          fmt::format("{:+.4f} [{:+.4f}, {:+.4f}]{}", eff, eci.low, eci.high, r.removal_from_step ? " (removal step)" : ""),
          std::isfinite(eff) && eff != 0 ? fmt::format("{:.1f}%", 100 * half_width(eff, eci) / std::fabs(eff))
                                         : std::string(text::kNotAvailable),
          energy,
          clocks.empty() ? "-" : clocks,
          rep ? (r.step_only_ms.empty() ? fmt::format("{} ({})", r.fit.blocks, r.stop)
                                        : fmt::format("{} + {} step rounds ({})", r.fit.blocks, r.step_only_ms.size(), r.stop))
              : fmt::format("{}", r.fit.blocks),
          fmt::format("{:.1f}", r.seconds)};
}

}  // namespace

reports::Section what_if_section(const std::vector<WhatIfResult>& results, double confidence, const std::string& label,
                                 bool notes) {
  reports::Section s;
  if (results.empty()) return s;
  const int level = static_cast<int>(std::lround(100 * confidence));
  s.title = fmt::format("What-if{}: stack of {} instances", label.empty() ? "" : ", " + label,
                        results.front().instances_per_stack);
  using reports::Align;
  reports::Table t;
  t.headers = {"component", "method", "levels", "isolated cost ms", fmt::format("slope ({}% CI)", level), "per forward",
               fmt::format("predicted removal ms/forward ({}% CI)", level), "± rel.",
               fmt::format("energy J per copy / per idle ms ({}% CI)", level), "SM clock MHz by level", "rounds",
               "time s"};
  t.align = {Align::left,  Align::left, Align::left,  Align::right, Align::left,  Align::right,
             Align::left,  Align::right, Align::left, Align::left,  Align::right, Align::right};
  for (const auto& r : results) t.add_row(what_if_row(r, confidence));
  s.tables.push_back(std::move(t));
  if (notes) s.notes = what_if_note_list();
  return s;
}

// The markdown of the section, after a blank line; it ends with the table's (or the notes') last line.
std::string what_if_markdown(const std::vector<WhatIfResult>& results, double confidence, const std::string& label,
                             bool notes) {
  if (results.empty()) return "";
  std::string md = "\n" + reports::to_markdown(what_if_section(results, confidence, label, notes), 3);
  md.pop_back();
  return md;
}

std::string what_if_notes() {
  std::string md = "\n";
  for (const auto& n : what_if_note_list()) md += "- " + n + "\n";
  return md;
}

std::vector<std::string> what_if_note_list() {
  return {
      "replicate: the component runs 0 (where it can be skipped), 1, 2 and 3 times per instance inside the "
      "stack; slope = stack time per extra copy (ms), fitted within order-balanced rounds, which run until its "
      "interval (t over rounds: each round is one independent pass over every copy count) is within 10% of it (0.02 ms for components under 0.2 ms) or the time cap (the stacks' own time) or " +
          std::to_string(WhatIfOptions{}.max_rounds) + " rounds. Predicted removal = "
          "slope x instances per forward; making the component X% faster saves X% of that. The removal itself is "
          "also measured in the same rounds (one copy minus none, the unit `--ab drop:` takes away); it predicts the "
          "removal (marked \"removal step\") wherever its interval is within the same target, or where the response "
          "is not linear (lack-of-fit p < 0.01): under a power cap a component whose power density differs from the "
          "rest's moves the clocks of everything else when it is removed. Where the slope is known before the step, "
      "rounds of one copy and none alone follow (\"step rounds\") until the step is known too or the time cap: a "
      "small kernel's first copy can cost more than the next ones (its input in L2, its launches queued behind each "
      "other), which the spread copy counts would not see.",
      "neighbours: on a power-capped GPU a stack's time depends on the stack before it (the clocks the previous "
      "stack's work left). Every timed stack follows one of its own level: where the stack before it ran another "
      "level (or the host paused), untimed stacks of the same level run first, for as long as that stack ran "
      "(`--prime-stacks`: at least that many); the removal A/Bs pair the same way, so both measure each variant in the state it leaves itself.",
      "delay: the slope is the stack's response to idle injected at every instance (the critical-path fraction: "
      "1 = every injected microsecond shows end to end, 0 = hidden). Predicted removal = fraction x isolated cost "
      "x instances per forward: right for idle work (a host round-trip, a wait), and the figure of what idle of "
      "this length costs.",
      "on a power-capped GPU idle is not like removed work: injected idle lowers the average power, so the "
      "clocks rise in the rest of the stack and a serial kernel's fraction reads well below 1, while removing "
      "the kernel removes its energy too. Price kernels by replication, idle by delay.",
      "energy: NVML's total-energy counter read around every stack; it advances in steps (about every 100 ms on an "
      "H200), so one stack's reading is quantised and the slope's interval carries that (more rounds narrow it).",
      "a small lack-of-fit p (< 0.01 in the JSON) means the response is not linear in the level: read the slope as an "
      "average over the levels."};
}

}  // namespace layerbench::harness
