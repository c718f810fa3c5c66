// layerbench-gate (--pairs FILE | --baseline B --candidate C) [--threshold 2%] [--alpha 0.05] [--metric KEY]
//                 [--higher-is-better] [--markdown FILE] [--json FILE]   ('-' = standard output)
//                 [--sequential [--equivalence E] [--max-pairs N]]
// Exit codes: 0 pass (no regression), 1 regression, 2 bad input or usage, 3 (--sequential) undecided.
#include "common/cli/app.hpp"
#include "common/json_text.hpp"
#include "common/cli/output_file.hpp"
#include "common/cli/suggest.hpp"
#include "study/gate.hpp"
#include "study/gate_inputs.hpp"
#include "study/gate_output.hpp"
#include "common/cli.hpp"
#include "common/output_file.hpp"
#include "reports/document.hpp"
#include "reports/inputs.hpp"
#include "reports/paired.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>

namespace lg = layerbench::gate;

namespace {

constexpr const char* kExamples =
    "EXAMPLES:\n"
    "  layerbench-gate --pairs study.jsonl --threshold 2%\n"
    "      a layerbench-ab study (JSONL, --json or --csv): regressed only if significant and beyond 2%\n"
    "  layerbench-gate --baseline main.json --candidate pr.json --markdown comment.md\n"
    "  layerbench-gate --baseline old.json --candidate new.json --metric cpu_time   (Google Benchmark JSON)\n"
    "  layerbench-gate --baseline old-hyperfine.json --candidate new-hyperfine.json   (hyperfine --export-json)\n";

// A rate (bandwidth, throughput, a count per second): higher is better.
bool is_rate(const std::string& metric, const std::string& unit) {
  if (unit.find("/s") != std::string::npos) return true;
  for (const char* word : {"per_second", "_per_s", "bandwidth", "throughput", "busbw", "algbw", "flops", "tflop"})
    if (metric.find(word) != std::string::npos) return true;
  return false;
}

bool is_time(const std::string& metric, const std::string& unit) {
  if (layerbench::reports::is_time_unit(unit)) return true;
  for (const char* m : {"real_time", "cpu_time", "samples_ms", "times", "wall", "user", "sys"})
    if (metric == m) return true;
  return false;
}

// The direction from the unit: --higher-is-better on a time is refused; a rate without it is
// higher-is-better, said in a warning.
void orient(lg::GateReport& r) {
  if (r.options.higher_is_better && is_time(r.metric, r.unit))
    throw std::invalid_argument(fmt::format("--higher-is-better: '{}' is a time{}: lower is better; drop the flag",
                                            r.metric, r.unit.empty() ? "" : " (" + r.unit + ")"));
  if (!r.options.higher_is_better && is_rate(r.metric, r.unit)) {
    r.options.higher_is_better = true;
    r.warnings.push_back(fmt::format("'{}' is a rate: higher is better (inferred from its {}; --higher-is-better "
                                     "says so explicitly)", r.metric, r.unit.empty() ? "name" : "unit " + r.unit));
  }
}

lg::GateReport run_paired(const std::string& path, const std::string& metric, const lg::GateOptions& o,
                          const std::optional<layerbench::stats::SequentialDesign>& sequential) {
  const auto study = lg::load_paired_study(path, metric);
  lg::GateReport r;
  r.paired = true;
  r.base_source = r.candidate_source = path;
  r.metric = study.metric.empty() ? "value" : study.metric;
  r.unit = study.unit;
  r.options = o;
  orient(r);
  r.findings.push_back(sequential ? lg::gate_sequential(r.metric, study.base, study.candidate, r.options, *sequential)
                                  : lg::gate_paired(r.metric, study.base, study.candidate, r.options));
  return r;
}

lg::GateReport run_unpaired(const std::string& base_path, const std::string& cand_path, const std::string& metric,
                            const lg::GateOptions& o) {
  const auto base = lg::load_samples(base_path, metric);
  const auto cand = lg::load_samples(cand_path, metric);
  if (base.kind != cand.kind)
    throw std::runtime_error(fmt::format("{} is {} JSON but {} is {} JSON: compare like with like", base_path,
                                         base.kind, cand_path, cand.kind));
  const auto m = lg::match(base, cand);
  if (m.keys.empty())
    throw std::runtime_error(fmt::format("no common benchmarks between {} and {}", base_path, cand_path));
  lg::GateReport r;
  r.base_source = base_path;
  r.candidate_source = cand_path;
  r.metric = base.metric;
  r.unit = base.unit;
  r.options = o;
  orient(r);
  for (const auto* f : {&base, &cand}) r.warnings.insert(r.warnings.end(), f->warnings.begin(), f->warnings.end());
  for (const auto& k : m.keys) {
    for (const auto* f : {&base, &cand}) {
      const auto& set = f->sets.at(k);
      if (set.values.empty())
        throw std::runtime_error(fmt::format("{}: '{}' has no samples: nothing to gate", f->path, set.display));
      for (double v : set.values)
        if (!(v >= 0))
          throw std::runtime_error(fmt::format("{}: '{}' has a negative or non-finite sample {} (times and rates are "
                                               "non-negative)", f->path, set.display, v));
    }
  }
  for (const auto& k : m.keys) {
    const auto& b = base.sets.at(k).display;
    const auto& c = cand.sets.at(k).display;
    r.findings.push_back(lg::gate_unpaired(b == c ? b : b + " -> " + c, base.sets.at(k).values,
                                           cand.sets.at(k).values, r.options));
  }
  for (const auto& k : m.only_base) r.only_base.push_back(base.sets.at(k).display);
  for (const auto& k : m.only_candidate) r.only_candidate.push_back(cand.sets.at(k).display);
  return r;
}

// --sequential's design (the gate's threshold as the effect and equivalence margins), or none.
std::optional<layerbench::stats::SequentialDesign> sequential_design(bool sequential, bool paired,
                                                                    const lg::GateOptions& o, double tune_pairs,
                                                                    std::size_t max_pairs,
                                                                    const std::string& equivalence_text) {
  std::optional<layerbench::stats::SequentialDesign> design;
  if (sequential) {
    if (!paired) throw std::invalid_argument("--sequential needs a paired study (--pairs FILE)");
    if (!(tune_pairs >= 1)) throw std::invalid_argument(fmt::format("--tune-pairs {:g}: must be at least 1", tune_pairs));
    design.emplace();
    design->alpha = o.alpha;
    design->tune_pairs = tune_pairs;
    design->max_pairs = max_pairs;
    design->equivalence = equivalence_text.empty() ? o.threshold : lg::parse_threshold(equivalence_text);
    design->equivalence_relative = true;
    design->effect_margin = o.threshold;  // stop once the change is wholly beyond the threshold
  } else if (!equivalence_text.empty() || max_pairs != 0) {
    throw std::invalid_argument("--equivalence and --max-pairs belong to --sequential");
  }
  return design;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"layerbench-gate: fail CI on a significant and relevant performance regression"};
  layerbench::cli::init_app(app, "layerbench-gate");
  std::string pairs, baseline, candidate, metric, markdown, json, threshold_text = "2%";
  lg::GateOptions o;
  double confidence = 1 - o.alpha;
  app.add_option("--pairs", pairs, "paired study: layerbench-ab JSONL or CSV with base,candidate columns");
  app.add_option("--baseline", baseline, "baseline result file (layerbench JSON or Google Benchmark JSON)");
  app.add_option("--candidate", candidate, "candidate result file (same kind as --baseline)");
  app.add_option("--threshold", threshold_text, "relevance threshold: a percentage (2%) or a fraction (0.02)");
  layerbench::cli::add_confidence_options(app, confidence, o.alpha);
  app.add_option("--metric", metric,
                 "Google Benchmark field (real_time, cpu_time, a counter) or the study metric; layerbench JSON: samples_ms");
  app.add_flag("--higher-is-better", o.higher_is_better, "a larger value is better (bandwidth, throughput)");
  layerbench::cli::add_output_option(app, "--markdown", markdown, "the verdict table as markdown (PR comment)");
  layerbench::cli::add_output_option(app, "--json", json, "the verdicts as JSON (schema layerbench-gate/1)");
  layerbench::cli::add_int(app, "--resamples", o.resamples, "bootstrap resamples", std::size_t{1000},
                           std::size_t{10000000});
  bool sequential = false;
  std::string equivalence_text;
  std::size_t max_pairs = 0;
  double tune_pairs = 10;
  app.add_flag("--sequential", sequential,
               "paired: the always-valid sequential rule (run it after every pair; exit 3 = undecided, add pairs)");
  app.add_option("--equivalence", equivalence_text, "--sequential: no-change margin (default: the threshold)");
  layerbench::cli::add_int(app, "--max-pairs", max_pairs,
                           "--sequential: cap; undecided at the cap is inconclusive (0 = none)", std::size_t{0},
                           std::size_t{10000000});
  layerbench::cli::add_real(app, "--tune-pairs", tune_pairs, "--sequential: pairs at which the interval is tightest",
                            layerbench::num::RealRange::closed(1, 1e7));
  layerbench::cli::add_int(app, "--seed", o.seed, "bootstrap seed");
  app.footer(kExamples);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    fmt::print(stderr, "layerbench-gate: error: {}\n", layerbench::cli::parse_error_text(app, e));
    return lg::kExitBadInput;
  }
  try {
    if (!(o.alpha >= 1e-6 && o.alpha <= 0.5))
      throw std::invalid_argument(fmt::format("--alpha {:g} (confidence {:g}): alpha must be in [1e-6, 0.5]", o.alpha,
                                              confidence));
    if (json == "-" && markdown == "-") throw std::invalid_argument("--json - and --markdown -: only one may go to standard output");
    o.threshold = lg::parse_threshold(threshold_text);
    const bool paired = !pairs.empty();
    if (paired == (!baseline.empty() || !candidate.empty()))
      throw std::invalid_argument("give either --pairs FILE or both --baseline and --candidate");
    if (!paired && (baseline.empty() || candidate.empty()))
      throw std::invalid_argument("--baseline and --candidate go together");
    layerbench::check_output_paths({{"--markdown", &markdown}, {"--json", &json}});  // before any work
    const auto design = sequential_design(sequential, paired, o, tune_pairs, max_pairs, equivalence_text);
    const auto report =
        paired ? run_paired(pairs, metric, o, design) : run_unpaired(baseline, candidate, metric, o);
    // The text verdict goes to standard output unless a file flag claimed it with '-'.
    if (json == "-" || markdown == "-")  // the text (which states them) is not shown
      for (const auto& w : report.warnings) fmt::print(stderr, "layerbench-gate: warning: {}\n", w);
    const std::vector<layerbench::reports::Section> sections{lg::gate_section(report)};
    if (json != "-" && markdown != "-") fmt::print("{}", layerbench::reports::to_text(sections));
    if (!json.empty()) layerbench::cli::write_output(json, layerbench::json_text(lg::to_json(report), 2) + "\n");
    if (!markdown.empty())
      layerbench::cli::write_output(markdown, layerbench::reports::to_markdown(sections, lg::kMarkdownHeading));
    return lg::exit_code(report);
  } catch (const std::exception& e) {
    fmt::print(stderr, "layerbench-gate: error: {}\n", e.what());
    return lg::kExitBadInput;
  }
}
