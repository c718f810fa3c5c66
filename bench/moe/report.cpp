// Table, derived lines and output files of the component profile. Every figure comes from the
// measurements' declared roles and work (reports/profile.hpp, reports/derived.hpp); nothing here
// formats a rate or a share by hand.
#include "bench/moe/report.hpp"

#include "bench/moe/driver.hpp"
#include "bench/moe/whatif.hpp"
#include "moe/expert_buckets.hpp"
#include "reports/derived.hpp"
#include "reports/profile.hpp"
#include "reports/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace layerbench::moe {

namespace {

using reports::fmt_quantity;
using reports::fmt_share;
using reports::fmt_time;
using reports::Unit;


// "k: v, k2: v2" of a flat check object; nested objects in parentheses.
std::string checks_text(const nlohmann::json& j) {
  std::string out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string v;
    if (it->is_boolean()) v = it->get<bool>() ? "yes" : "NO";
    else if (it->is_number_integer() || (it->is_number() && it->get<double>() == std::floor(it->get<double>())))
      v = fmt::format("{}", it->get<double>());
    else if (it->is_number()) v = reports::fmt_sig(it->get<double>(), 4);
    else if (it->is_object()) v = "(" + checks_text(*it) + ")";
    else if (it->is_string()) v = it->get<std::string>();
    else v = it->dump();
    out += (out.empty() ? "" : ", ") + it.key() + " " + v;
  }
  return out;
}

struct RepeatSection {
  nlohmann::json json;
  reports::Section section;
};

// --repeat: each run's paired ratio to the reference with its interval, and the spread of the
// run values beside the mean within-run half-width.
RepeatSection repeat_section(const std::vector<std::vector<reports::Measurement>>& runs, const ProfileInputs& in,
                             double confidence) {
  RepeatSection out;
  out.json = nlohmann::json::array();
  const int level = static_cast<int>(std::lround(100 * confidence));
  reports::Table t;
  t.headers = {"component"};
  for (std::size_t r = 0; r < runs.size(); ++r) t.headers.push_back(fmt::format("run {}", r + 1));
  t.headers.insert(t.headers.end(), {"run-to-run spread (max - min)", "mean within-run half-width"});
  t.align.assign(runs.size() + 1, reports::Align::left);
  for (std::size_t i = 0; i < runs.front().size(); ++i) {
    const auto& name = runs.front()[i].name;
    nlohmann::json per = nlohmann::json::array();
    std::vector<std::string> row{name};
    double lo = 1e300, hi = -1e300, hw = 0;
    int n = 0;
    for (const auto& run : runs) {
      const auto it = std::find_if(run.begin(), run.end(), [&](const auto& m) { return m.name == name; });
      if (it == run.end()) {
        row.emplace_back();  // not timed in this run: its cell stays empty
        continue;
      }
      const auto e = reports::paired_rate_ratio(*it, it->work.flops > 0 ? it->work.flops : runs.front()[i].work.flops,
                                                reference_of(in, *it).m.work.flops, confidence);
      per.push_back(e.to_json());
      row.push_back(e.valid ? fmt::format("{} [{}, {}]", fmt_share(e.value), fmt_share(e.ci.low), fmt_share(e.ci.high)) : "n/a");
      if (!e.valid) continue;
      lo = std::min(lo, e.value);
      hi = std::max(hi, e.value);
      hw += std::max(e.value - e.ci.low, e.ci.high - e.value);
      ++n;
    }
    const double spread = n > 0 ? hi - lo : stats::nan_value, mean_hw = n > 0 ? hw / n : stats::nan_value;
    out.json.push_back({{"component", name}, {"runs", per}, {"spread_max_minus_min", spread}, {"mean_within_run_half_width", mean_hw}});
    row.push_back(fmt::format("{:.1f} points", 100 * spread));
    row.push_back(fmt::format("{:.1f} points", 100 * mean_hw));
    t.add_row(std::move(row));
  }
  out.section.title = fmt::format("Reference ratios over {} runs (FLOP rate / dense GEMM, each from pairs timed in the "
                                  "same iterations; {}% CI within each run)", runs.size(), level);
  out.section.tables.push_back(std::move(t));
  return out;
}

// The backend the layer ran on: "cuda ..." or the host's ops.
bool on_cuda(const ProfileInputs& in) { return in.ops.rfind("cuda", 0) == 0; }

// The composition table's extra columns: the paired rate ratio to the dense reference, the
// what-if slope and removal, and the telemetry of each component.
reports::ExtraColumns profile_columns(const ProfileInputs& in, double confidence) {
  const bool with_what_if = !in.what_ifs.empty();
  const bool with_ratio = on_cuda(in);
  const bool with_tel = std::any_of(in.comps.begin(), in.comps.end(), [](const auto& r) { return r.telemetry.samples > 0; });
  const int level = static_cast<int>(std::lround(100 * confidence));
  reports::ExtraColumns extra;
  if (with_ratio) extra.headers.push_back(fmt::format("FLOP rate / dense GEMM, paired ({}% CI)", level));
  if (with_what_if) {
    extra.headers.push_back(fmt::format("what-if slope: ms per copy (replicate) or fraction (delay) ({}% CI)", level));
    extra.headers.push_back(fmt::format("removal per forward ({}% CI)", level));
  }
  if (with_tel) extra.headers.push_back("SM MHz / power-capped");
  extra.cells = [&in, confidence, with_ratio, with_what_if, with_tel](const reports::Measurement& m) {
    const auto& dense = reference_of(in, m).m;
    std::vector<std::string> cells;
    const bool rated = m.work.flops > 0 && &m != &dense && m.role != reports::Role::reference && dense.work.flops > 0;
    if (with_ratio && rated) {
      const auto e = reports::rate_ratio_to_reference(m, m.work.flops, dense, dense.work.flops, confidence);
      cells.push_back(e.valid ? fmt::format("{} [{}, {}]", fmt_share(e.value), fmt_share(e.ci.low), fmt_share(e.ci.high))
                              : "");
    } else if (with_ratio) {
      cells.emplace_back();
    }
    if (with_what_if) {
      const auto w = std::find_if(in.what_ifs.begin(), in.what_ifs.end(),
                                  [&](const auto& x) { return x.target.component == m.name; });
      if (w != in.what_ifs.end()) {
        const double f = w->instances_per_forward;
        const auto e = w->effect_ci(f, confidence);
        cells.push_back(fmt::format("{} [{}, {}] {}", reports::fmt_sig(w->fit.slope), reports::fmt_sig(w->fit.ci.low),
                                    reports::fmt_sig(w->fit.ci.high),
                                    w->target.method == harness::WhatIfMethod::replicate ? "ms/copy" : "fraction"));
        cells.push_back(fmt::format("{} {}", reports::fmt_quantity_signed(w->effect_ms(f), Unit::ms),
                                    reports::fmt_interval(e.low, e.high, Unit::ms)));
      } else {
        cells.insert(cells.end(), {"", ""});
      }
    }
    if (with_tel) {
      const ComponentResult* cr = nullptr;
      for (const auto& r : in.comps)
        if (r.m.name == m.name) cr = &r;
      cells.push_back(cr && std::isfinite(cr->telemetry.sm_clock_mhz)
                          ? fmt::format("{} / {}", reports::fmt_sig(cr->telemetry.sm_clock_mhz, 4),
                                        fmt_share(cr->telemetry.power_capped_share))
                          : "");
    }
    return cells;
  };
  return extra;
}

// The profile's section: the heading, how it was timed, and the model and the kernel path of each
// component as its first notes (the kernel paths also into `kernel_paths`).
reports::Section profile_section(const ProfileInputs& in, const harness::Runner& runner, nlohmann::json& kernel_paths) {
  const RunConfig& c = in.cfg;
  reports::Section s;
  s.title = in.family.title(in.ops);
  s.intro = fmt::format(
      "{} warmup + {} timed iterations, rank-max per iteration. Parts are nested under their parent, with their share "
      "of it; every part is timed on its own. Rates from declared work (dense GEMM reference {}^3{}).",
      runner.options().warmup, runner.options().iterations, in.dense.size,
      in.dense_fp8 ? "; FP8 parts against the FP8 dense reference of the same size" : "");
  s.notes = {"model: " + summary(c.model), "model source: " + c.model.origin};
  if (!c.model.inference.empty()) s.notes.push_back(c.model.inference);
  for (const auto& line : not_from_config_lines(c.model)) s.notes.push_back("not read from the config: " + line);
  for (const auto& n : c.model.notes) s.notes.push_back("note: " + n);
  for (const auto& n : in.family.header_notes()) s.notes.push_back(n);
  if (in.dense_fp8)
    s.notes.push_back(fmt::format("FP8 dense reference ({}^3, same seeded operands quantized rowwise): {}",
                                  in.dense_fp8->size, in.dense_fp8->describe));
  else if (!in.dense.note.empty())
    s.notes.push_back("FP8 parts rated against the bf16 dense reference: no FP8 dense reference here (" +
                      in.dense.note + ")");
  for (const auto& r : in.comps)
    if (r.m.params.contains("kernel_path")) {
      kernel_paths[r.m.name] = r.m.params["kernel_path"];
      s.notes.push_back(fmt::format("kernel path of {}: {}", r.m.name, r.m.params["kernel_path"].get<std::string>()));
    }
  return s;
}

// The expert load and the expert tiles by layer of the stack.
void load_lines(const ProfileInputs& in, std::vector<std::string>& notes) {
  const RunConfig& c = in.cfg;
  notes.push_back(fmt::format("expert load: max/mean = {} (busiest expert {} assignments){}",
                              reports::fmt_sig(in.load.value("max_over_mean_all_ranks", 0.0)),
                              reports::fmt_sig(in.load.value("max_per_expert_all_ranks", 0.0)),
                              in.load.contains("experts_without_tokens")
                                  ? fmt::format(", experts with no token {:g}", in.load["experts_without_tokens"].get<double>())
                                  : std::string()));
  if (in.load.contains("stack_expert_tiles")) {
    const auto& t = in.load["stack_expert_tiles"];
    auto list = [](const nlohmann::json& v) {
      std::string out;
      for (const auto& e : v) out += (out.empty() ? "" : ", ") + fmt::format("{:g}", e.get<double>());
      return out;
    };
    notes.push_back(fmt::format("expert tiles ({} rows) by layer of the {}-layer stack: same input [{}]; chained [{}]. "
                      "The stack timed here (what-if, A/Bs) takes the {} input{}",
                      kExpertTileRows, c.layers, list(t["same"]), list(t["chained"]), c.stack_input,
                      c.stack_input == "same" ? ": a component left out leaves its output as written, so the rest of the "
                                                "stack computes on unchanged data."
                                              : ": a component left out leaves a stale output that changes what later "
                                                "layers route."));
  }
}

// The derived lines, each with its interval, as notes (into `derived` for the JSON).
void derived_lines(const ProfileInputs& in, const std::vector<reports::Measurement>& results, nlohmann::json& derived,
                   std::vector<std::string>& notes) {
  const double confidence = in.cfg.confidence;
  in.family.derived_lines(results, derived, notes);
  if (!on_cuda(in)) {
    derived["expert_rate_over_dense"] = nullptr;
    notes.push_back("FLOP rate / dense GEMM: not printed on the host backend (its dense reference is a naive fp32 loop, "
                    "not a tuned GEMM, so a ratio to it says nothing about the experts' efficiency)");
  } else if (const auto* lec = find(results, in.family.expert_component());
             lec && reference_of(in, *lec).m.work.flops > 0) {
    const auto& ref = reference_of(in, *lec);
    const auto& dense = ref.m;
    const auto e = reports::rate_ratio_to_reference(*lec, lec->work.flops, dense, dense.work.flops, confidence);
    derived["expert_rate_over_dense"] = e.to_json();
    derived["expert_rate_reference"] = dense.name;
    notes.push_back(fmt::format("{}: {} against the {}dense GEMM reference's {} ({}^3, same run): {} "
                      "(FLOPs: 2 per MAC of the gate, up and down expert GEMMs over this rank's routed assignments; "
                      "router, activation and combine not counted)",
                      lec->name, reports::rate_text(*lec), &ref == in.dense_fp8 ? "FP8 " : "",
                      reports::rate_text(dense) + " alone", ref.size,
                      e.valid ? fmt::format("{} [{}, {}]", fmt_share(e.value), fmt_share(e.ci.low), fmt_share(e.ci.high))
                              : "n/a"));
  }
  load_lines(in, notes);
  notes.push_back("checks: " + checks_text(in.checks));
}

// What follows the derived lines: the what-if, the A/Bs, what was not timed, a power-cap warning
// (their JSON into `extra_json`).
std::string study_blocks(const ProfileInputs& in, nlohmann::json& extra_json) {
  const double confidence = in.cfg.confidence;
  std::string md;
  if (!in.what_ifs.empty()) {
    nlohmann::json wj = nlohmann::json::array();
    for (const auto& w : in.what_ifs) wj.push_back(w.to_json(confidence));
    extra_json["what_if"] = wj;
    md += harness::what_if_markdown(in.what_ifs, confidence);
    // The probe overlaps only where collectives progress beside compute (the cuda backend).
    const auto oc = in.ops.rfind("cuda", 0) == 0 ? overlap_check(in.what_ifs, in.comps, confidence) : std::nullopt;
    if (oc) {
      extra_json["overlap_prediction"] = oc->json;
      md += oc->markdown;
    }
  }
  // An A/B: its design as a level-3 section, its analysis' sections with bold titles.
  auto ab_markdown = [](const AbResult& a) {
    return "\n" + reports::to_markdown(a.head, 3) + reports::to_markdown(a.analysis, 0);
  };
  if (in.ab) {
    extra_json["ab"] = in.ab->json;
    md += ab_markdown(*in.ab);
  }
  if (!in.drops.empty()) {
    nlohmann::json dj = nlohmann::json::array();
    for (const auto& d : in.drops) {
      dj.push_back(d.json);
      md += ab_markdown(d);
    }
    extra_json["ab_drop"] = dj;
  }
  md += "\n" + reports::to_markdown(std::vector{not_timed_section(in.cfg, in.comps, in.what_ifs)}, 3);
  extra_json["telemetry_status"] = in.telemetry_status;
  const bool with_tel = std::any_of(in.comps.begin(), in.comps.end(), [](const auto& r) { return r.telemetry.samples > 0; });
  double capped = 0;
  for (const auto& r : in.comps)
    if (std::isfinite(r.telemetry.power_capped_share)) capped = std::max(capped, r.telemetry.power_capped_share);
  if (with_tel && capped >= ab::kPowerCappedWarning)
    md += fmt::format("\n- Warning: the GPU was power-capped during the measurements (up to {} of the samples of a "
                      "component): idle time raises the clocks, so removing work can save less (or more) than its "
                      "isolated cost.\n", fmt_share(capped));
  return md;
}

nlohmann::json config_json(const ProfileInputs& in) {
  const RunConfig& c = in.cfg;
  nlohmann::json j = in.family.config_json();
  j.update({{"layers", c.layers}, {"stack_input", c.stack_input}, {"moe_layers", c.moe_layers}, {"ab", c.ab},
            {"ab_drops", c.ab_drops}, {"pairs", c.pairs}, {"prime_stacks", c.prime_stacks}, {"graph", c.graph},
            {"ops", in.ops}, {"seed", c.common.seed}, {"confidence", c.confidence}});
  return j;
}

}  // namespace

const DenseRef& reference_of(const ProfileInputs& in, const reports::Measurement& m) {
  return in.dense_fp8 && m.reference == in.dense_fp8->m.name ? *in.dense_fp8 : in.dense;
}

const reports::Measurement* find(const std::vector<reports::Measurement>& v, const std::string& name) {
  for (const auto& m : v)
    if (m.name == name) return &m;
  return nullptr;
}

void finish_report(harness::Context& ctx, const harness::Runner& runner, ProfileInputs& in) {
  const RunConfig& c = in.cfg;
  const std::string group = in.family.group();
  in.dense.m.params = {{"m", in.dense.size}, {"n", in.dense.size}, {"k", in.dense.size}};
  nlohmann::json telemetry_json = nlohmann::json::object();
  std::vector<reports::Measurement> results;
  for (auto& r : in.comps) {
    r.m.params.update(in.family.params());
    if (r.telemetry.samples > 0) telemetry_json[r.m.name] = covariates_json(r.telemetry);
    results.push_back(r.m);
  }
  results.push_back(in.dense.m);
  if (in.dense_fp8) {
    reports::Measurement f = in.dense_fp8->m;
    f.params = {{"m", in.dense_fp8->size}, {"n", in.dense_fp8->size}, {"k", in.dense_fp8->size},
                {"precision", "fp8-rowwise"}, {"kernel_path", in.dense_fp8->describe}};
    results.push_back(std::move(f));
  }

  // The profile's section: the composition table (roles) with the what-if and telemetry columns;
  // then the model, the composition's warnings and the derived lines as notes.
  const auto comp = reports::composition(results, group, "Component profile", profile_columns(in, c.confidence));
  nlohmann::json kernel_paths = nlohmann::json::object();
  std::vector<reports::Section> sections{profile_section(in, runner, kernel_paths)};
  auto& profile = sections.front();
  profile.tables.push_back(comp.table);
  for (const auto& w : comp.warnings) profile.notes.push_back("Warning: " + w);
  nlohmann::json derived = {{"moe_layers", c.moe_layers}, {"confidence", c.confidence}};
  derived_lines(in, results, derived, profile.notes);
  std::string md = reports::to_markdown(sections, 2);
  if (!in.repeats.empty()) {
    const auto rr = repeat_section(in.repeats, in, c.confidence);
    derived["reference_ratio_repeats"] = rr.json;
    md += "\n" + reports::to_markdown(std::vector{rr.section}, 3);
  }

  nlohmann::json extra_json = {{"model", to_json(c.model)}, {"kernel_paths", kernel_paths}, {"derived", derived}, {"checks", in.checks}, {"expert_load", in.load},
                               {"warnings", comp.warnings}, {"layout", group}, {"block", in.family.layer().kind()},
                               {"world_size", in.family.layer().ep().size()},
                               {"tokens_per_rank", in.family.tokens_per_rank()}, {"iterations", runner.options().iterations}};
  if (!telemetry_json.empty()) extra_json["telemetry"] = telemetry_json;
  extra_json.update(in.family.extra_json());
  md += study_blocks(in, extra_json);
  const auto doc = harness::make_document(ctx, runner, config_json(in), results, extra_json);
  if (ctx.is_root()) {
    std::fputs(md.c_str(), harness::text_stream(c.common));
    std::fflush(harness::text_stream(c.common));
  }
  harness::write_outputs(ctx, c.common, doc, results, md);
}

}  // namespace layerbench::moe
