#include "bench/ab/cli.hpp"
#include "common/json_text.hpp"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "study/amount.hpp"
#include "study/diagnostics.hpp"
#include "common/cli/app.hpp"
#include "common/cli/output_file.hpp"
#include "common/cli/suggest.hpp"
#include "study/errors.hpp"
#include "study/input.hpp"
#include "reports/document.hpp"
#include "reports/paired.hpp"
#include "study/runner.hpp"
#include "study/study_report.hpp"
#include "common/cli.hpp"
#include "common/output_file.hpp"
#include "stats/power.hpp"
#include "stats/sequential.hpp"

namespace layerbench::ab {
namespace {

struct AnalysisFlags {
  double confidence = 0.95, alpha = 0.05;
  std::size_t resamples = 200000;
  std::uint64_t seed = stats::default_bootstrap_seed;
  double trim = 0.1;
  std::optional<std::string> predicted;
  bool continuity = false;
  std::string zero_method = "wilcox";
  std::string json;      // FILE or '-'
  std::string markdown;  // FILE or '-'
  std::string csv;       // FILE or '-': every recorded run of a study
};

// Bounds: the bootstrap keeps one statistic per resample, and a study longer than this is a typo.
constexpr std::size_t kMaxResamples = 10'000'000;
constexpr std::size_t kMaxPairs = 10'000'000;
constexpr std::size_t kMaxWarmup = 1'000'000;
constexpr std::size_t kMaxRetries = 1000;
constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600.0;  // 1e12 s would overflow the clock
// A `run` without --pairs or --sequential: two arms run sequentially up to this cap, more arms
// (no sequential rule) run this many pairs. Both are stated on standard error.
constexpr std::size_t kDefaultSequentialCap = 100;
constexpr std::size_t kDefaultPairs = 30;

constexpr const char* kRunExamples = R"(EXAMPLES:
  layerbench-ab run 'sleep 0.02' 'sleep 0.025'
      hyperfine's form: the first command is the base, the second the candidate; a sequential
      study that stops once its interval decides (at most 100 pairs)
  layerbench-ab run --base ./old --candidate ./new --pairs 30 --name old --name new
  layerbench-ab run --base ./old --candidate ./new --sequential --max-pairs 200 --equivalence 1%
  layerbench-ab run 'app --fast' 'app --safe' --metric 'lat(ms)=regex:latency ([0-9.]+) ms' --metric wall
  layerbench-ab run --base ./old --candidate ./new --pairs 30 --study s.jsonl --resume
)";
constexpr const char* kAnalyzeExamples = R"(EXAMPLES:
  layerbench-ab analyze study.jsonl
  layerbench-ab analyze study.jsonl --markdown pr.md --json analysis.json
  layerbench-ab analyze pairs.csv --confidence 99%
)";
constexpr const char* kPlanExamples = R"(EXAMPLES:
  layerbench-ab plan --sd 1% --effect 2%
  layerbench-ab plan --pilot study.jsonl --power 0.9
)";

void add_analysis_flags(CLI::App* cmd, AnalysisFlags& f) {
  cli::add_confidence_options(*cmd, f.confidence, f.alpha);
  cli::add_int(*cmd, "--resamples", f.resamples, "bootstrap resamples", std::size_t{1000}, kMaxResamples);
  cli::add_int(*cmd, "--seed", f.seed, "bootstrap seed (fixed default: runs reproduce)");
  cli::add_real(*cmd, "--trim", f.trim, "trimmed-mean proportion cut from each end, in [0, 0.5)", {0, 0.5, false, true});
  cmd->add_option("--predicted", f.predicted, "predicted delta (candidate - base; + = slower for times) to check, X or X+-E (also X±E): E is the half-width "
                  "of the prediction's own interval at --confidence");
  cmd->add_flag("--continuity", f.continuity, "continuity correction of the Wilcoxon z");
  cmd->add_option("--zero-method", f.zero_method, "zeros in Wilcoxon: wilcox (drop), pratt or zsplit");
  cli::add_output_option(*cmd, "--json", f.json, "the analysis as JSON (schema layerbench-ab-analysis/1)");
  cli::add_output_option(*cmd, "--markdown", f.markdown, "the analysis as markdown tables for a pull request");
  cli::add_output_option(*cmd, "--csv", f.csv, "every recorded run of a study (times, peak RSS, metrics) as CSV");
}

// "X", "X+-E", "X+/-E" or "X±E"; both finite, E >= 0.
struct PredictionSpec {
  double value = 0, half_width = 0;
};
PredictionSpec parse_prediction(const std::string& text) {
  auto number = [&](const std::string& s) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != s.size() || !std::isfinite(v)) {
      throw InputError(fmt::format("--predicted {}: expected X or X+-E with finite numbers", text));
    }
    return v;
  };
  for (const std::string sep : {"\u00b1", "+/-", "+-"}) {
    const auto at = text.find(sep, 1);
    if (at == std::string::npos) continue;
    PredictionSpec p{number(text.substr(0, at)), number(text.substr(at + sep.size()))};
    if (p.half_width < 0) throw InputError(fmt::format("--predicted {}: E must be >= 0", text));
    return p;
  }
  return {number(text), 0};
}

stats::PairedOptions to_options(const AnalysisFlags& f) {
  if (!(f.confidence > 0 && f.confidence < 1)) {
    throw InputError(fmt::format("--confidence {}: must be in (0, 1)", f.confidence));
  }
  if (f.resamples < 1000) throw InputError(fmt::format("--resamples {}: must be at least 1000", f.resamples));
  if (!(f.trim >= 0 && f.trim < 0.5)) throw InputError(fmt::format("--trim {}: must be in [0, 0.5)", f.trim));
  if ((f.json == "-") + (f.markdown == "-") + (f.csv == "-") > 1) {
    throw InputError("--json -, --markdown - and --csv -: only one may go to standard output");
  }
  check_output_paths({{"--json", &f.json}, {"--markdown", &f.markdown}, {"--csv", &f.csv}});  // before any work
  stats::PairedOptions o;
  o.confidence = f.confidence;
  o.resamples = f.resamples;
  o.seed = f.seed;
  o.trim = f.trim;
  if (f.predicted) {
    const auto p = parse_prediction(*f.predicted);
    o.predicted = p.value;
    o.predicted_half_width = p.half_width;
  }
  o.continuity = f.continuity;
  try {
    o.zero_method = stats::parse_zero_method(f.zero_method);
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string("--zero-method: ") + e.what());
  }
  return o;
}

// The text report goes to standard output unless --json - or --markdown - claimed it.
bool text_to_stdout(const AnalysisFlags& f) { return f.json != "-" && f.markdown != "-" && f.csv != "-"; }

int analyze(const std::vector<std::string>& files, const AnalysisFlags& flags) {
  const auto options = to_options(flags);
  nlohmann::json all = nlohmann::json::array();
  std::string markdown;
  for (const auto& file : files) {
    const auto input = load_pairs(file);
    // The analysis runs once per input; each format only prints it.
    std::optional<StudyAnalysis> study;
    std::optional<stats::PairedAnalysis> plain;
    if (input.journal) study = analyze_study(*input.journal, options);
    else plain = stats::analyze_paired(input.base, input.candidate, options);
    reports::PairedContext ctx;
    if (!input.metric.empty()) ctx.metric = input.metric;
    ctx.unit = input.unit;
    // The analysis as sections: each format's one printer prints them.
    const auto sections = study ? study_sections(*study) : reports::paired_sections(*plain, options, ctx);
    auto document = [&]() -> nlohmann::json {
      if (study) return study_json(*study);
      auto j = reports::paired_json(*plain, options, ctx);
      j["pairs"] = reports::pairs_json(input.pair_ids, input.base, input.candidate);
      return j;
    };
    const std::string heading = files.size() > 1 ? fmt::format("== {} ==\n", file) : "";
    if (text_to_stdout(flags)) fmt::print("{}{}{}", heading, reports::to_text(sections), files.size() > 1 ? "\n" : "");
    if (!flags.json.empty()) {
      auto j = document();
      if (files.size() > 1) j["input"] = file;
      all.push_back(std::move(j));
    }
    if (!flags.csv.empty()) {
      if (!input.journal) throw InputError(fmt::format("{}: --csv needs a study JSONL (it lists the recorded runs)", file));
      if (files.size() > 1) throw InputError("--csv: give one study file");
      cli::write_output(flags.csv, runs_csv(*input.journal));
    }
    if (!flags.markdown.empty()) markdown += (files.size() > 1 ? fmt::format("#### {}\n\n", file) : "") + reports::to_markdown(sections, 0);
  }
  // One input: its analysis object (the same as `run` writes); several: {"schema", "analyses"}
  // with one analysis per input, each naming its input.
  if (!flags.json.empty()) {
    const nlohmann::json doc =
        all.size() == 1 ? all[0] : nlohmann::json{{"schema", "layerbench-ab-analyses/1"}, {"analyses", all}};
    cli::write_output(flags.json, json_text(doc, 2) + "\n");
  }
  if (!flags.markdown.empty()) cli::write_output(flags.markdown, markdown);
  return 0;
}

struct PlanFlags {
  std::optional<std::string> sd, effect;  // a number in the metric's unit or a percentage of the base mean
  double alpha = 0.05, confidence = 0.95, power = 0.8;
  std::string pilot;
  std::string json;  // FILE or '-'
};

int plan(const PlanFlags& f) {
  if (!f.json.empty()) check_output_path(f.json, "--json");
  double sd = 0, effect = 0;
  Amount sd_in, effect_in;  // zero and absent unless given
  if (f.sd) sd_in = parse_amount(*f.sd, "--sd");
  if (f.effect) effect_in = parse_amount(*f.effect, "--effect");
  bool pct = false;  // both given as percentages, no pilot: print them as such
  if (!f.pilot.empty()) {
    const auto input = load_pairs(f.pilot);
    std::vector<double> d;
    for (std::size_t i = 0; i < input.base.size(); ++i) d.push_back(input.candidate[i] - input.base[i]);
    const auto s = stats::summarize(d);
    const double base_mean = stats::summarize(input.base).mean;  // what a percentage is of
    auto value = [&](bool given, const Amount& a, double fallback) {
      return !given ? fallback : a.relative ? a.value * std::fabs(base_mean) : a.value;
    };
    sd = value(f.sd.has_value(), sd_in, s.sd);
    effect = value(f.effect.has_value(), effect_in, s.mean);
  } else {
    if (!f.sd || !f.effect) throw InputError("plan: give --sd and --effect, or --pilot FILE");
    if (sd_in.relative != effect_in.relative) {
      throw InputError("plan: give --sd and --effect both as percentages or both in the metric's unit (or a --pilot "
                       "whose base mean the percentages are of)");
    }
    sd = sd_in.value;  // both relative: the plan depends on effect / sd only
    effect = effect_in.value;
    pct = sd_in.relative;
  }
  if (!(sd > 0) || !std::isfinite(sd)) throw InputError(fmt::format("--sd {}: must be positive", sd));
  if (effect == 0 || !std::isfinite(effect)) throw InputError(fmt::format("--effect {}: must be non-zero", effect));
  if (!(f.alpha > 0 && f.alpha < 1)) throw InputError(fmt::format("--alpha {}: must be in (0, 1)", f.alpha));
  if (!(f.power > 0 && f.power < 1)) throw InputError(fmt::format("--power {}: must be in (0, 1)", f.power));
  stats::SamplePlan p;
  try {
    p = stats::plan_paired(sd, effect, f.alpha, f.power);
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string("plan: ") + e.what());
  }
  if (!f.json.empty()) {
    const nlohmann::json j = {{"schema", "layerbench-ab-plan/1"}, {"sd", sd},           {"effect", effect},   {"alpha", f.alpha},
                              {"power", f.power},   {"n_normal", p.n_normal}, {"n_t", p.n_t},
                              {"n_exact", p.n_exact}, {"recommended", p.recommended}};
    cli::write_output(f.json, json_text(j, 2) + "\n");
  }
  if (f.json != "-") {
    fmt::print("Pairs needed to detect a delta of {} with sd {} (two-sided alpha={:g}, power={:g}):\n",
               pct ? fmt::format("{:g}%", 100 * effect) : fmt::format("{:g}", effect),
               pct ? fmt::format("{:g}%", 100 * sd) : fmt::format("{:g}", sd), f.alpha, f.power);
    fmt::print("  normal approximation   {:.3f}\n  t fixed point          {:.3f}\n  exact (noncentral t)   {:.3f}\n",
               p.n_normal, p.n_t, p.n_exact);
    fmt::print("  recommended            {} pairs (never fewer than {}: the smallest n at which a two-sided rank "
               "test can reach p < {:g})\n", p.recommended, stats::min_pairs_for_alpha(f.alpha), f.alpha);
  }
  return 0;
}

// Every flag of `run` and the words after them.
struct RunFlags {
  RunOptions opts;
  AnalysisFlags analysis;
  std::vector<std::string> candidates, metric_specs, positional;
  std::size_t max_pairs = 0;
  bool sequential = false;
  std::string equivalence;
  double tune_pairs = 10;
  CLI::Option* pairs_opt = nullptr;
  CLI::Option* base_opt = nullptr;
};

CLI::App* add_run_command(CLI::App& app, RunFlags& f) {
  auto& c = f.opts.config;
  auto* run_cmd = app.add_subcommand("run", "run an interleaved, resumable A/B study of two or more shell commands");
  run_cmd->add_option("COMMAND", f.positional,
                      "the arms as hyperfine takes them: the first is the base, each further one a candidate "
                      "(instead of --base/--candidate)");
  f.base_opt = run_cmd->add_option("--base", c.base, "base command (run through /bin/sh -c)");
  run_cmd->add_option("--candidate", f.candidates,
                      "candidate command; repeat for more arms, each compared against the base (Holm-adjusted)")
      ->allow_extra_args(false);  // one value per flag: the words after it are the positional commands
  run_cmd->add_option("--name", c.names, "display name of an arm, in order: base first, then each candidate (repeat)")
      ->allow_extra_args(false);
  f.pairs_opt = cli::add_int(*run_cmd, "--pairs", c.pairs,
                                 fmt::format("number of pairs (fixed-n study); without it and --sequential: a sequential "
                                             "study capped at {} pairs (two arms) or {} pairs (more arms)",
                                             kDefaultSequentialCap, kDefaultPairs),
                                 std::size_t{1}, kMaxPairs);
  run_cmd->add_flag("--sequential", f.sequential,
                    "stop as soon as an always-valid confidence sequence decides: it excludes 0 (effect), lies "
                    "inside +-equivalence, or --max-pairs is reached");
  auto* max_opt = cli::add_int(*run_cmd, "--max-pairs", f.max_pairs, "cap of a --sequential study", std::size_t{2}, kMaxPairs);
  run_cmd->add_option("--equivalence", f.equivalence,
                      "--sequential: stop when the interval lies inside +-E (5% of the base mean, or a number in "
                      "the metric's unit)");
  cli::add_real(*run_cmd, "--tune-pairs", f.tune_pairs, "--sequential: pairs at which the interval is tightest",
                num::RealRange::closed(1, static_cast<double>(kMaxPairs)));
  f.pairs_opt->excludes(max_opt);
  cli::add_int(*run_cmd, "--warmup", c.warmup, "unrecorded warm-up rounds of every arm", std::size_t{0}, kMaxWarmup);
  run_cmd->add_option("--order", c.order,
                      "alternate (AB, BA, ...; more arms rotate), fixed (AB) or random (seeded)");
  run_cmd->add_option("--metric", f.metric_specs,
                      "[NAME[(UNIT)]=]SOURCE, repeatable (the first decides): wall, user, sys, peak_rss (KiB), "
                      "[stdout:|stderr:|file:PATH:]regex:PATTERN or json:KEY (default: stdout and stderr), "
                      "file:PATH (re-read after each run; a file the run did not rewrite is stale)")
      ->allow_extra_args(false);
  run_cmd->add_option("--study,--out", f.opts.out, "study JSONL journal (appended and fsync'ed per run; --out is the "
                                                     "old spelling)")->type_name("FILE");
  run_cmd->add_flag("--resume", f.opts.resume, "continue a study from its first incomplete pair");
  run_cmd->add_flag("--force", f.opts.force, "start the study afresh when the study file exists (it must be a "
                    "study; anything else is never overwritten)");
  run_cmd->add_flag("--ignore-failure,-i", c.ignore_failure,
                    "exclude a pair whose run failed (after --retries) and carry on; without it the first failure "
                    "stops the study");
  cli::add_real(*run_cmd, "--timeout", c.timeout, "seconds before a run's process group is killed (0 = none)",
                num::RealRange::non_negative(kMaxTimeoutSeconds));
  cli::add_int(*run_cmd, "--retries", c.retries, "retries of a pair whose run failed", std::size_t{0}, kMaxRetries);
  run_cmd->add_option("--prepare", c.prepare, "command run before every run");
  run_cmd->add_option("--shell,-S", c.shell, "sh: run each command through /bin/sh -c and subtract the shell's own "
                      "start-up (measured before the study, as hyperfine does); none: run it directly, split into "
                      "words (no pipes, redirections or variables)");
  run_cmd->add_flag_callback("-N", [&c] { c.shell = "none"; }, "the same as --shell none (hyperfine's -N)");
  run_cmd->add_option("--check-output", c.check_output, "file each run writes; reports whether the arms match");
  run_cmd->add_option("--telemetry", c.telemetry, "gpu: sample GPU clocks, power, throttle reasons and memory (NVML) "
                      "while each run is alive; per-run summaries in the JSONL, per-arm comparison in the report");
  cli::add_real(*run_cmd, "--telemetry-period", c.telemetry_period_ms, "telemetry sampling period in ms",
                num::RealRange::closed(1, 60000));
  add_analysis_flags(run_cmd, f.analysis);  // --seed also seeds --order random
  run_cmd->footer(kRunExamples);
  return run_cmd;
}

// --sequential's design (and the default study's): alpha from --confidence, tau tuned for
// `tune_pairs`, an optional equivalence margin.
stats::SequentialDesign sequential_design(double confidence, double tune_pairs, std::size_t cap,
                                          const std::string& equivalence) {
  if (!(tune_pairs >= 1) || !std::isfinite(tune_pairs)) {
    throw InputError(fmt::format("--tune-pairs {}: must be at least 1", tune_pairs));
  }
  stats::SequentialDesign d;
  d.alpha = std::round((1 - confidence) * 1e12) / 1e12;  // 0.05, not 0.050000000000000044
  d.tune_pairs = tune_pairs;
  d.tau = stats::tau_for_pairs(tune_pairs, d.alpha);
  if (!equivalence.empty()) {
    const auto e = parse_amount(equivalence, "--equivalence");
    if (!(e.value > 0)) throw InputError(fmt::format("--equivalence {}: must be positive", equivalence));
    d.equivalence = e.value;
    d.equivalence_relative = e.relative;
  }
  d.max_pairs = cap;
  return d;
}

// `run` once its flags are parsed: the arms (positional or flagged), the study length, then the study.
int start_run(RunFlags& f) {
  auto& run_opts = f.opts;
  auto& c = run_opts.config;
  auto& candidates = f.candidates;
  const auto& positional = f.positional;
  const auto& metric_specs = f.metric_specs;
  run_opts.analysis = to_options(f.analysis);
  run_opts.json = f.analysis.json;
  run_opts.markdown = f.analysis.markdown;
  run_opts.csv = f.analysis.csv;
  if (!positional.empty()) {
    if (!c.base.empty() || !candidates.empty())
      throw InputError("give the commands either as positional arguments (base first) or with --base/--candidate");
    if (positional.size() < 2)
      throw InputError(fmt::format("one command ('{}'): an A/B study needs two (base first, then each candidate)",
                                   positional[0]));
    c.base = positional[0];
    candidates.assign(positional.begin() + 1, positional.end());
  }
  if (c.base.empty() && f.base_opt->count() > 0) throw InputError("--base: missing command");
  if (c.base.empty()) throw InputError("--base is required (or give the commands positionally: base first)");
  if (candidates.empty()) throw InputError("--candidate is required (or give the commands positionally: base first)");
  if (run_opts.force && run_opts.resume) throw InputError("--force and --resume exclude each other");
  c.candidate = candidates.at(0);
  c.more_candidates.assign(candidates.begin() + 1, candidates.end());
  if (!metric_specs.empty()) {
    c.metric = metric_specs.front();
    c.metrics.assign(metric_specs.begin() + 1, metric_specs.end());
  }
  c.seed = f.analysis.seed;
  if (f.sequential) {
    if (f.max_pairs == 0) throw InputError("--sequential needs --max-pairs N (the cap)");
    c.sequential = sequential_design(run_opts.analysis.confidence, f.tune_pairs, f.max_pairs, f.equivalence);
    c.pairs = f.max_pairs;
  } else {
    if (f.max_pairs != 0 || !f.equivalence.empty()) {
      throw InputError("--max-pairs and --equivalence belong to --sequential studies");
    }
    if (c.pairs == 0 && !*f.pairs_opt) {
      if (candidates.size() == 1) {
        c.sequential = sequential_design(run_opts.analysis.confidence, f.tune_pairs, kDefaultSequentialCap, "");
        c.pairs = kDefaultSequentialCap;
        std::fprintf(stderr, "layerbench-ab: no --pairs: a sequential study that stops once its %g%% confidence "
                     "sequence excludes no change, at most %zu pairs (--pairs N for a fixed count)\n",
                     100 * (1 - c.sequential->alpha), kDefaultSequentialCap);
      } else {
        c.pairs = kDefaultPairs;
        std::fprintf(stderr, "layerbench-ab: no --pairs: %zu pairs (--pairs N to choose)\n", kDefaultPairs);
      }
    }
  }
  check_output_paths({{"--study", &run_opts.out}, {"--json", &run_opts.json}, {"--markdown", &run_opts.markdown}});
  return run_study(run_opts);
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"layerbench-ab: interleaved A/B studies and their paired analysis"};
  cli::init_app(app, "layerbench-ab");
  app.require_subcommand(1);

  AnalysisFlags analyze_flags;
  std::vector<std::string> files;
  auto* analyze_cmd = app.add_subcommand("analyze", "paired analysis of a CSV (base, candidate columns) or study JSONL");
  analyze_cmd->add_option("FILE", files, "input files")->required();
  add_analysis_flags(analyze_cmd, analyze_flags);

  PlanFlags plan_flags;
  auto* plan_cmd = app.add_subcommand("plan", "pairs needed for a paired study");
  plan_cmd->add_option("--sd", plan_flags.sd, "sd of the paired deltas (a number, or a percentage such as 1% of the "
                       "base mean)");
  plan_cmd->add_option("--effect", plan_flags.effect, "delta to detect (a number, or a percentage such as 3%)");
  cli::add_confidence_options(*plan_cmd, plan_flags.confidence, plan_flags.alpha);
  cli::add_real(*plan_cmd, "--power", plan_flags.power, "power", num::RealRange::open(0, 1));
  plan_cmd->add_option("--pilot", plan_flags.pilot, "pilot study (CSV or JSONL) giving sd and, by default, the effect");
  cli::add_output_option(*plan_cmd, "--json", plan_flags.json, "the plan as JSON (schema layerbench-ab-plan/1)");

  RunFlags run_flags;
  auto* run_cmd = add_run_command(app, run_flags);
  analyze_cmd->footer(kAnalyzeExamples);
  plan_cmd->footer(kPlanExamples);
  app.footer(std::string(kRunExamples).substr(0, std::string(kRunExamples).find("\n  layerbench-ab run --base")) +
             "\n  layerbench-ab analyze study.jsonl --markdown pr.md\n  layerbench-ab plan --sd 1% --effect 2%\n");

  if (argc > 1 && argv[1][0] != '-' && !analyze_cmd->check_name(argv[1]) && !plan_cmd->check_name(argv[1]) &&
      !run_cmd->check_name(argv[1])) {
    std::fprintf(stderr, "layerbench-ab: error: unknown command '%s' (expected analyze, plan or run; see --help)\n", argv[1]);
    return exit_bad_input;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "layerbench-ab: error: %s\n", cli::parse_error_text(app, e).c_str());
    return exit_bad_input;
  }
  try {
    if (*analyze_cmd) return analyze(files, analyze_flags);
    if (*plan_cmd) return plan(plan_flags);
    return start_run(run_flags);
  } catch (const InputError& e) {
    std::fprintf(stderr, "layerbench-ab: error: %s\n", e.what());
    return exit_bad_input;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "layerbench-ab: error: %s\n", e.what());
    return exit_bad_input;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "layerbench-ab: failed: %s\n", e.what());
    return 1;
  }
}

}  // namespace layerbench::ab
