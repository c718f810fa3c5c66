#include "study/runner.hpp"
#include "common/input_file.hpp"
#include "common/json_text.hpp"
#include "common/cli/output_file.hpp"
#include "common/cli/progress.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <algorithm>
#include <iterator>
#include <sys/stat.h>
#include <unistd.h>

#include "study/diagnostics.hpp"
#include "study/errors.hpp"
#include "study/metric.hpp"
#include "study/process.hpp"
#include "study/study_file.hpp"
#include "study/study_report.hpp"
#include "study/telemetry.hpp"
#include "collectives/telemetry.hpp"
#include "stats/sequential.hpp"

namespace layerbench::ab {
namespace {

// The one piece of process-wide state: a signal handler can only talk through a global flag.
volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int) { g_stop = 1; }

// Installs the Ctrl-C handler for the lifetime of a study and restores the previous ones.
class StopSignals {
 public:
  StopSignals() {
    g_stop = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: poll() returns early
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

std::uint64_t splitmix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The order of the arms (indices into arms_of) in one pair/round. Two arms: alternate = AB, BA, ...;
// random = a stable seeded coin per pair. More arms: alternate rotates the order by one arm per
// round (each arm takes each position equally often); random shuffles each round (seeded).
std::vector<std::size_t> round_order(const StudyConfig& c, std::size_t pair, std::size_t k) {
  std::vector<std::size_t> order(k);
  for (std::size_t i = 0; i < k; ++i) order[i] = i;
  if (c.order == "fixed") return order;
  if (c.order == "random") {
    const std::uint64_t z = c.seed + 0x9E3779B97F4A7C15ULL * (pair + 1);
    if (k == 2) {
      if ((splitmix(z) & 1) != 0) std::swap(order[0], order[1]);
      return order;
    }
    for (std::size_t i = k - 1; i > 0; --i) {  // Fisher-Yates on a splitmix stream
      const auto j = static_cast<std::size_t>(splitmix(z + 0x9E3779B97F4A7C15ULL * i) % (i + 1));
      std::swap(order[i], order[j]);
    }
    return order;
  }
  std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>((k - pair % k) % k), order.end());
  return order;
}

std::string hash_file(const std::string& path) {
  // The file a run wrote, hashed as it streams (it may be large). Only a regular file is opened
  // (the input layer says what the path names: a FIFO would stall the study); anything else, as
  // no file, is "missing" (the pair's outputs are then not compared).
  if (input::kind_of(path) != input::Kind::regular) return "missing";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "missing";
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64: enough to tell identical bytes apart
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= static_cast<unsigned char>(buf[i]);
      h *= 0x100000001b3ULL;
    }
  }
  return fmt::format("{:016x}", h);
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void validate(const RunOptions& o) {
  const auto& c = o.config;
  if (c.base.empty()) throw InputError("--base: missing command");
  if (c.candidate.empty()) throw InputError("--candidate: missing command");
  for (const auto& m : c.more_candidates) {
    if (m.empty()) throw InputError("--candidate: missing command");
  }
  if (c.sequential && !c.more_candidates.empty()) {
    throw InputError("--sequential compares one candidate against the base; run one study per candidate");
  }
  const std::size_t arms = 2 + c.more_candidates.size();
  if (c.names.size() > arms) {
    throw InputError(fmt::format("--name given {} times for {} arms (base first, then each candidate)", c.names.size(),
                                 arms));
  }
  for (std::size_t i = 0; i < c.names.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (c.names[i] == c.names[j]) throw InputError(fmt::format("--name {}: two arms share the name", c.names[i]));
    }
  }
  if (c.pairs == 0) throw InputError(c.sequential ? "--max-pairs must be at least 2" : "--pairs must be at least 1");
  if (c.sequential && c.pairs < 2) throw InputError("--max-pairs must be at least 2");
  if (c.order != "alternate" && c.order != "fixed" && c.order != "random") {
    throw InputError(fmt::format("--order {}: expected alternate, fixed or random", c.order));
  }
  if (c.timeout < 0) throw InputError("--timeout must be >= 0");
  if (c.shell != "sh" && c.shell != "none") throw InputError(fmt::format("--shell {}: expected sh or none", c.shell));
  if (!c.telemetry.empty() && c.telemetry != "gpu") throw InputError(fmt::format("--telemetry {}: expected gpu", c.telemetry));
  if (!(c.telemetry_period_ms >= 1 && c.telemetry_period_ms <= 10000)) {
    throw InputError(fmt::format("--telemetry-period {}: must be in [1, 10000] ms", c.telemetry_period_ms));
  }
}

// The shell's start-up: the mean of kSpawnRuns runs of /bin/sh -c '' (hyperfine measures it the
// same way and subtracts it).
constexpr int kSpawnRuns = 30;
void measure_shell_spawn(StudyConfig& c) {
  double wall = 0, user = 0, sys = 0;
  for (int i = 0; i < kSpawnRuns; ++i) {
    const auto r = run_shell("", 10, &g_stop);
    if (r.interrupted) return;
    wall += r.wall_seconds;
    user += r.user_seconds;
    sys += r.sys_seconds;
  }
  c.spawn_wall = wall / kSpawnRuns;
  c.spawn_user = user / kSpawnRuns;
  c.spawn_sys = sys / kSpawnRuns;
}

// The 1-minute load average (/proc/loadavg), NaN where unreadable.
double load_average() {
  std::ifstream in("/proc/loadavg");
  double load = std::numeric_limits<double>::quiet_NaN();
  if (!(in >> load)) return std::numeric_limits<double>::quiet_NaN();
  return load;
}

// What the study starts with beyond the flags: the GPU sampler's state, the machine's load (a
// warning when it is loaded) and the shell's start-up.
StudyConfig prepared_config(const RunOptions& o, std::unique_ptr<telemetry::Sampler>& sampler) {
  StudyConfig config = o.config;
  if (config.telemetry == "gpu") {
    std::string why;
    sampler = telemetry::make_gpu_sampler({}, std::chrono::microseconds(static_cast<long>(config.telemetry_period_ms * 1000)),
                                          &why);
    config.telemetry_status = sampler ? json_text(sampler->describe()) : "unavailable: " + why;
    if (!sampler) std::fprintf(stderr, "layerbench-ab: warning: --telemetry gpu: %s; runs are recorded without it\n",
                               why.c_str());
  }
  config.load_avg = load_average();
  config.cpus = static_cast<unsigned>(std::max(0L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  if (std::isfinite(config.load_avg) && config.cpus > 0 && config.load_avg > config.cpus)
    std::fprintf(stderr, "layerbench-ab: warning: the machine is loaded (load average %.2f on %u CPUs): the runs will "
                 "wait for the CPU, which widens the intervals and can fake a difference; recorded in the study\n",
                 config.load_avg, config.cpus);
  if (config.shell == "sh") measure_shell_spawn(config);
  return config;
}

// --shell none: each arm's command split into words once.
std::map<std::string, std::vector<std::string>> direct_argvs(const StudyConfig& config) {
  std::map<std::string, std::vector<std::string>> argvs;
  if (config.shell != "none") return argvs;
  for (const auto& arm : arms_of(config)) {
    try {
      argvs[arm.command] = split_command(arm.command);
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format("--shell none: {}", e.what()));
    }
  }
  return argvs;
}

// A run's record from its process result: times, exit, output hash and every metric (`why` says
// why the primary one is missing).
RunRecord record_of(const ProcessResult& result, RunRecord rec, const StudyConfig& config,
                    const std::vector<MetricSpec>& metrics, std::map<std::string, FileStamp>& stamps, std::string& why) {
  rec.wall = result.wall_seconds;
  rec.user = result.user_seconds;
  rec.sys = result.sys_seconds;
  rec.peak_rss_kib = result.peak_rss_kib;
  rec.exit_code = result.exit_code;
  rec.stdout_tail = tail_of(result.stdout_text, 200);
  if (!config.check_output.empty()) rec.output_hash = hash_file(config.check_output);
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    const auto& m = metrics[i];
    std::string reason;
    const auto v = extract_metric(m, result, m.source == MetricSpec::Source::file ? stamps[m.path] : FileStamp{},
                                  &reason);
    if (v) rec.metrics[m.name] = *v;
    if (i == 0) {
      rec.metric = v;
      why = reason;
    }
  }
  return rec;
}

// A pair given up: with no metric ever found the study cannot work at all (every run failed, or
// the metric is never printed); otherwise, without --ignore-failure, the first failure stops it.
void after_excluded(const Study& study, const StudyConfig& config, bool metric_ever_found, std::size_t pair,
                    const std::string& result_stderr) {
  const RunRecord* last = study.runs.empty() ? nullptr : &study.runs.back();
  if (!metric_ever_found) {
    const bool any_succeeded = std::any_of(study.runs.begin(), study.runs.end(), [](const RunRecord& r) {
      return r.exit_code == 0 && r.status != "timeout";
    });
    if (!any_succeeded && last) {
      throw InputError(fmt::format("every run failed, so no metric could be read: the {} command {} (exit {}){}",
                                   last->arm, last->status == "timeout" ? "timed out" : "failed", last->exit_code,
                                   result_stderr.empty() ? "" : "; its stderr ends: " + result_stderr));
    }
    throw InputError(fmt::format("--metric {}: never found in the output of a successful run (last stdout: '{}')",
                                 config.metric, last ? last->stdout_tail : ""));
  }
  if (config.ignore_failure || !last) return;
  // Fail fast: a broken command fails every pair alike, so the first failure (after its retries)
  // ends the study; the failed run stays recorded.
  Arm arm{last->arm, last->arm, ""};
  for (const auto& a : arms_of(config))
    if (a.key == last->arm) arm = a;
  throw InputError(fmt::format(
      "the {} command '{}' {} in pair {} ({}){}; stopped at the first failure (--retries N retries a failed pair, "
      "--ignore-failure excludes it and carries on)",
      arm.name, arm.command,
      last->status == "timeout" ? "timed out" : last->status == "no_metric" ? "gave no metric" : "failed", pair,
      last->status == "no_metric" ? "exit 0" : fmt::format("exit {}", last->exit_code),
      result_stderr.empty() ? "" : "; its stderr ends: " + result_stderr));
}

// After the last pair: the study as `analyze` will read it, analysed once and printed in each
// requested format.
int finish(const RunOptions& o, const std::string& result_stderr) {
  const Study saved = read_study(o.out);  // analyse exactly what `analyze` will read later
  if (completed_pairs(saved).size() < 2) {
    if (g_stop) return exit_interrupted;
    const RunRecord* failed = nullptr;
    for (const auto& r : saved.runs)
      if (r.status != "ok") failed = &r;
    throw InputError(fmt::format("{}: fewer than 2 completed pairs; nothing to analyse{}", o.out,
                                 failed ? fmt::format(" (the last failed run: {} {}, exit {}{})", failed->arm, failed->status,
                                                      failed->exit_code,
                                                      result_stderr.empty() ? "" : "; its stderr ends: " + result_stderr)
                                        : ""));
  }
  const auto analysis = analyze_study(saved, o.analysis);  // once; each format only prints it
  const auto sections = study_sections(analysis);
  if (o.json != "-" && o.markdown != "-" && o.csv != "-") std::fputs(reports::to_text(sections).c_str(), stdout);
  std::fflush(stdout);
  if (!o.json.empty()) cli::write_output(o.json, json_text(study_json(analysis), 2) + "\n");
  if (!o.markdown.empty()) cli::write_output(o.markdown, reports::to_markdown(sections, 0));
  if (!o.csv.empty()) cli::write_output(o.csv, runs_csv(saved));
  return g_stop ? exit_interrupted : 0;
}

// One run of a command (after --prepare), with the shell's own start-up taken off its times.
ProcessResult run_command(const StudyConfig& config, const std::map<std::string, std::vector<std::string>>& argvs,
                          cli::Progress& progress, const std::string& command, const std::string& label,
                          const Environment& env) {
  if (!config.prepare.empty()) {
    const auto prep = run_shell(config.prepare, config.timeout, &g_stop);
    if (prep.exit_code != 0 && !prep.interrupted) {
      progress.message(fmt::format("warning: --prepare exited with {}", prep.exit_code));
    }
  }
  if (!config.check_output.empty()) ::unlink(config.check_output.c_str());  // never hash a stale file
  auto r = run_shell(command, config.timeout, &g_stop, env, [&](double elapsed) { progress.running(label, elapsed); },
                     argvs.count(command) ? &argvs.at(command) : nullptr);
  // The shell's own start-up is not the command's time (hyperfine's correction).
  r.wall_seconds = std::max(0.0, r.wall_seconds - config.spawn_wall);
  r.user_seconds = std::max(0.0, r.user_seconds - config.spawn_user);
  r.sys_seconds = std::max(0.0, r.sys_seconds - config.spawn_sys);
  return r;
}

// What one attempt of a pair reads and updates of the study in progress.
struct AttemptContext {
  const StudyConfig& config;
  const std::vector<Arm>& arms;
  const std::vector<MetricSpec>& metrics;
  telemetry::Sampler* sampler;  // null without --telemetry
  StudyFile& writer;
  Study& study;
  cli::Progress& progress;
  std::map<std::string, FileStamp>& stamps;
  bool& metric_ever_found;
  std::string& result_stderr;  // the last failed run's stderr, for the message when every run fails
};
using RunOne = std::function<ProcessResult(const std::string& command, const std::string& label, const Environment& env)>;

// Runs the arms of one attempt of a pair in the pair's order, recording each run as it ends, up to
// the first failed one (false) or an interruption; `values` gets each arm's primary metric.
bool run_attempt(AttemptContext& c, const RunOne& run_one, std::size_t pair, std::size_t attempt,
                 std::vector<double>& values) {
  const auto order = round_order(c.config, pair, c.arms.size());
  for (std::size_t position = 0; position < order.size() && !g_stop; ++position) {
    const auto& arm = c.arms[order[position]];
    RunRecord rec;
    rec.pair = pair;
    rec.attempt = attempt;
    rec.arm = arm.key;
    rec.position = static_cast<int>(position);
    rec.start = unix_now();
    for (const auto& m : c.metrics) {
      if (m.source == MetricSpec::Source::file) c.stamps[m.path] = stamp_of(m.path);
    }
    const double t0 = telemetry::Sampler::now();
    const auto result = run_one(arm.command, fmt::format("pair {} {}", pair, arm.name),
                                {{"LAYERBENCH_AB_PAIR", std::to_string(pair)},
                                 {"LAYERBENCH_AB_ATTEMPT", std::to_string(attempt)},
                                 {"LAYERBENCH_AB_ARM", arm.name}});
    if (result.interrupted) break;  // unfinished: not recorded
    if (c.sampler) rec.telemetry = telemetry::window_json(c.sampler->summaries(t0, telemetry::Sampler::now()));
    std::string why;
    rec = record_of(result, std::move(rec), c.config, c.metrics, c.stamps, why);
    c.metric_ever_found |= rec.metric.has_value();
    rec.status = result.timed_out ? "timeout" : result.exit_code != 0 ? "failed" : !rec.metric ? "no_metric" : "ok";
    if (rec.status != "ok") rec.metric.reset();
    c.writer.append(run_json(rec));
    c.study.runs.push_back(rec);
    if (rec.status == "ok") {
      values[order[position]] = *rec.metric;
      continue;
    }
    c.result_stderr = rec.status == "no_metric" && !why.empty() ? why : tail_of(result.stderr_tail, 200);
    while (!c.result_stderr.empty() && std::isspace(static_cast<unsigned char>(c.result_stderr.back())))
      c.result_stderr.pop_back();  // the message goes on after it
    const std::string detail = rec.status == "no_metric" && !why.empty() ? ": " + why
                               : result.stderr_tail.empty() ? ""
                                                            : ": " + tail_of(result.stderr_tail, 200);
    c.progress.message(fmt::format("pair {} attempt {}: {} run {} (exit {}){}", pair, attempt, arm.name, rec.status,
                                   rec.exit_code, detail));
    return false;
  }
  return true;
}

}  // namespace

int run_study(const RunOptions& o) {
  validate(o);
  std::vector<std::string> metric_texts{o.config.metric};
  metric_texts.insert(metric_texts.end(), o.config.metrics.begin(), o.config.metrics.end());
  const auto metrics = parse_metrics(metric_texts);
  std::unique_ptr<telemetry::Sampler> sampler;
  StudyConfig config = prepared_config(o, sampler);
  StudyFile writer(o.out, config, o.resume, o.force);  // locked until the study ends
  Study& study = writer.study();
  if (writer.resumed()) {  // the correction the study started with
    config.spawn_wall = study.config.spawn_wall;
    config.spawn_user = study.config.spawn_user;
    config.spawn_sys = study.config.spawn_sys;
  }
  const auto argvs = direct_argvs(config);
  const bool existing = writer.resumed();

  const StopSignals signals;
  auto states = pair_states(study, config.pairs);
  std::size_t already = 0;
  for (const auto& s : states) already += s.completed || s.excluded;
  cli::Progress progress("ab", config.pairs, {}, cli::Progress::Lines::per_step, stderr, already);
  if (existing) progress.message(fmt::format("resuming {}: {} of {} pairs already done", o.out, already, config.pairs));

  // The command learns which run it is: lets an engine label its logs or output files.
  const RunOne run_one = [&](const std::string& command, const std::string& label, const Environment& env) {
    return run_command(config, argvs, progress, command, label, env);
  };

  const auto arms = arms_of(config);
  // A sequential study already stopped (e.g. killed before its report) runs nothing more.
  const auto replayed = sequential_state(study);
  bool sequential_done = replayed && replayed->stop != stats::SequentialStop::running;
  for (std::size_t w = 0; w < config.warmup && !g_stop && !sequential_done; ++w)
    for (const auto& arm : arms)
      if (!g_stop) run_one(arm.command, arm.name, {});

  bool metric_ever_found = false;
  std::string result_stderr;  // the last failed run's stderr, for the message when every run fails
  for (const auto& r : study.runs) metric_ever_found |= r.metric.has_value();
  std::vector<double> deltas;
  for (const auto& p : completed_pairs(study)) deltas.push_back(p.candidate - p.base);
  double delta_sum = std::accumulate(deltas.begin(), deltas.end(), 0.0);
  std::map<std::string, FileStamp> stamps;  // file: metrics, before each run
  AttemptContext ctx{config, arms, metrics, sampler.get(), writer, study, progress, stamps, metric_ever_found,
                     result_stderr};

  for (std::size_t pair = 0; pair < config.pairs && !g_stop && !sequential_done; ++pair) {
    auto& state = states[pair];
    while (!state.completed && !state.excluded && !g_stop) {
      std::vector<double> values(arms.size(), 0.0);
      const bool ok = run_attempt(ctx, run_one, pair, state.next_attempt++, values);
      if (g_stop) break;
      if (ok) {
        state.completed = true;
        deltas.push_back(values[1] - values[0]);
        delta_sum += deltas.back();
        progress.step(fmt::format("pair {} done", pair),
                      fmt::format("delta {:+.5g}; mean delta {:+.5g} over {} pairs", deltas.back(),
                                  delta_sum / static_cast<double>(deltas.size()), deltas.size()));
        if (const auto seq = sequential_state(study); seq && seq->stop != stats::SequentialStop::running) {
          progress.message(stats::sequential_summary(*seq));
          sequential_done = true;
        }
      } else if (++state.failed_attempts > config.retries) {
        state.excluded = true;
        writer.append(excluded_json(pair));
        study.excluded.push_back(pair);
        progress.message(fmt::format("pair {} excluded after {} failed attempt(s)", pair, state.failed_attempts));
        if (!metric_ever_found || !config.ignore_failure) progress.finish();
        after_excluded(study, config, metric_ever_found, pair, result_stderr);
      }
    }
  }
  progress.finish();
  if (g_stop) progress.message("interrupted: the finished runs are saved; continue with --resume");
  return finish(o, result_stderr);
}

}  // namespace layerbench::ab
