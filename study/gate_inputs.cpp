#include "study/gate_inputs.hpp"
#include "common/json_text.hpp"

#include "reports/inputs.hpp"
#include "reports/gbench_json.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace layerbench::gate {
namespace {

// "k=v, k=v" from a params object (keys sorted by nlohmann::json's std::map, so the text is canonical).
std::string params_text(const nlohmann::json& params, const std::string& name) {
  std::string out;
  for (const auto& [k, v] : params.items())
    if (!(k == "op" && v == name))  // the op is already the name
      out += fmt::format("{}{}={}", out.empty() ? "" : ", ", k, v.is_string() ? v.get<std::string>() : json_text(v));
  return out;
}

SampleFile from_layerbench(const nlohmann::json& doc, const std::string& path, const std::string& metric) {
  if (!metric.empty() && metric != "samples_ms" && metric != "time")
    throw std::runtime_error(fmt::format(
        "{}: unknown metric '{}' for a layerbench result file (only per-iteration samples_ms are gated)", path, metric));
  const auto file = reports::result_file_from_json(doc, path);
  SampleFile f{path, "layerbench", "samples_ms", "ms", {}, {}};
  for (const auto& m : file.results) {
    // Matched by name + group + params: the same measurement in both runs.
    const std::string key = m.name + "\x1f" + m.group + "\x1f" + json_text(m.params);
    std::string display = m.name;
    if (!m.group.empty()) display += " (" + m.group + ")";
    if (!m.params.empty()) display += " [" + params_text(m.params, m.name) + "]";
    if (f.sets.count(key)) throw std::runtime_error(fmt::format("{}: duplicate result '{}'", path, display));
    f.sets[key] = {display, m.samples_ms};
  }
  return f;
}

SampleFile from_hyperfine(const nlohmann::json& doc, const std::string& path, const std::string& metric) {
  if (!metric.empty() && metric != "times" && metric != "time")
    throw std::runtime_error(fmt::format("{}: unknown metric '{}' for hyperfine JSON (its runs' times are gated)", path,
                                         metric));
  SampleFile f{path, "hyperfine", "times", "s", {}, {}};
  const auto& results = doc["results"];
  for (const auto& r : results) {
    const std::string command = r["command"].is_string() ? r["command"].get<std::string>() : json_text(r["command"]);
    // One command per file: the two files' commands are the two arms, whatever their text.
    const std::string key = results.size() == 1 ? std::string("\x1fthe command") : command;
    if (f.sets.count(key)) throw std::runtime_error(fmt::format("{}: command '{}' twice", path, command));
    auto& set = f.sets[key];
    set.display = command;
    try {
      set.values = r["times"].get<std::vector<double>>();
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format("{}: '{}': times: {}", path, command, e.what()));
    }
  }
  return f;
}

// Google Benchmark's context: a load average above the core count means the timings shared the CPU.
void warn_if_loaded(const nlohmann::json& doc, const std::string& path, SampleFile& f) {
  const auto& ctx = doc.value("context", nlohmann::json::object());
  if (!ctx.contains("load_avg") || !ctx["load_avg"].is_array() || ctx["load_avg"].empty() ||
      !ctx["load_avg"][0].is_number() || !ctx.contains("num_cpus") || !ctx["num_cpus"].is_number())
    return;
  const double load = ctx["load_avg"][0].get<double>();
  const double cpus = ctx["num_cpus"].get<double>();
  if (cpus > 0 && load > cpus)
    f.warnings.push_back(fmt::format("{}: the machine was loaded while it ran (load average {:.3g} on {:g} CPUs): "
                                     "its timings include waiting for the CPU; an A/A comparison on such a machine "
                                     "raises false alarms", path, load, cpus));
}

SampleFile from_gbench(const nlohmann::json& doc, const std::string& path, const std::string& metric) {
  SampleFile f{path, "gbench", metric.empty() ? "real_time" : metric, "", {}, {}};
  warn_if_loaded(doc, path, f);
  bool any_metric = false;
  bool any_aggregate = false, any_iteration = false;
  for (const auto& e : reports::read_gbench_entries(doc, path)) {
    if (e.aggregate) {  // mean/median/stddev rows
      any_aggregate = true;
      continue;
    }
    any_iteration = true;
    if (e.error) continue;
    // Times in ns whatever each benchmark's time_unit (it may differ between benchmarks, and
    // between two runs of one benchmark when it is chosen from the median).
    const auto v = e.value_ns(f.metric);
    if (!v) continue;
    any_metric = true;
    if (reports::is_gbench_time_field(f.metric)) f.unit = "ns";
    auto& set = f.sets[e.run_name];
    set.display = e.run_name;
    set.values.push_back(*v);
  }
  if (any_aggregate && !any_iteration) {  // whatever the metric: there are no repetitions to test
    // A layerbench binary's repetitions are its --iterations samples (it refuses --benchmark_repetitions).
    const bool layerbench = doc.value("context", nlohmann::json::object()).contains("layerbench_binary");
    throw std::runtime_error(fmt::format(
        "{}: written with --benchmark_report_aggregates_only: only each benchmark's mean, median, stddev and cv, no "
        "repetitions, so there is nothing to test; rerun without --benchmark_report_aggregates_only ({}; the "
        "display-only flag --benchmark_display_aggregates_only keeps them)",
        path, layerbench ? "each of the binary's --iterations samples is one repetition"
                         : "and with --benchmark_repetitions=N"));
  }
  if (!any_metric)
    throw std::runtime_error(fmt::format("{}: unknown metric '{}' (no benchmark repetition carries it)", path, f.metric));
  return f;
}

}  // namespace

SampleFile load_samples(const std::string& path, const std::string& metric) {
  // Decided by content first, so a CSV, a study journal or text gets its name, not a parser error.
  switch (reports::sniff_input(path)) {
    case reports::InputKind::study_csv:
      throw std::runtime_error(path + ": a CSV that is not a layerbench output: --baseline/--candidate take samples "
                                      "(layerbench result JSON, Google Benchmark or hyperfine JSON); a CSV with base "
                                      "and candidate columns is a paired study: gate it with --pairs " + path);
    case reports::InputKind::study_jsonl:
    case reports::InputKind::runs_csv:
    case reports::InputKind::analysis_json:
      throw std::runtime_error(path + ": a paired study (base and candidate measured in pairs): gate it with --pairs " +
                               path);
    case reports::InputKind::results_csv:
      throw std::runtime_error(path + ": a layerbench results CSV (one row per measurement): summaries, no samples "
                                      "to test; gate the --json file of the same run, or show it with layerbench-report");
    case reports::InputKind::trace_json:
      throw std::runtime_error(path + ": a layerbench trace (--trace): a few iterations on a time line, not the "
                                      "run's samples; gate the --json file of the same run");
    case reports::InputKind::unknown:
      throw std::runtime_error(path + ": neither JSON nor CSV: not a layerbench result file, Google Benchmark JSON "
                                      "nor hyperfine JSON");
    default: break;
  }
  const auto doc = reports::read_json_file(path);
  if (reports::is_layerbench_json(doc)) return from_layerbench(doc, path, metric);
  if (reports::is_gbench_json(doc)) return from_gbench(doc, path, metric);
  if (reports::is_hyperfine_json(doc)) return from_hyperfine(doc, path, metric);
  throw std::runtime_error(path + ": neither a layerbench result file (schema layerbench/N), Google Benchmark JSON "
                                  "nor hyperfine JSON");
}

reports::PairedStudy load_paired_study(const std::string& path, const std::string& metric) {
  return reports::load_study(path, metric);
}

Matched match(const SampleFile& base, const SampleFile& candidate) {
  Matched m;
  for (const auto& [k, v] : base.sets) (candidate.sets.count(k) ? m.keys : m.only_base).push_back(k);
  for (const auto& [k, v] : candidate.sets)
    if (!base.sets.count(k)) m.only_candidate.push_back(k);
  return m;
}

}  // namespace layerbench::gate
