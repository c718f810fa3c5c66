#include "harness/main.hpp"

#include "common/input_file.hpp"
#include "common/json_text.hpp"

#include "common/cli/app.hpp"
#include "common/cli/suggest.hpp"
#include "common/cli/output_file.hpp"
#include "common/cli/progress.hpp"
#include "harness/gbench.hpp"
#include "harness/trace.hpp"
#include "collectives/error.hpp"

#include <fmt/format.h>

#include <chrono>
#include <limits>
#include <cstdio>
#include <thread>
#include <unistd.h>

namespace layerbench::harness {
namespace {

// Max of every rank's code, or -1 if some rank did not join within `timeout` (it is stuck
// elsewhere, e.g. inside a collective): then agreement is impossible and the caller aborts.
// `comm` is private to the agreement, so it can never match some other collective a rank is in.
int agree(MPI_Comm comm, int code, std::chrono::milliseconds timeout) {
  int all = 0;
  MPI_Request req;
  if (MPI_Iallreduce(&code, &all, 1, MPI_INT, MPI_MAX, comm, &req) != MPI_SUCCESS) return -1;
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return all;
    if (std::chrono::steady_clock::now() - t0 > timeout) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

[[noreturn]] void abort_job(int code, const std::string& msg) {
  std::fprintf(stderr, "%s\n", msg.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

// How a rank's run ended: its exit code, and whether it ended with an error (whose message is
// printed once, by rank 0, for every rank).
struct RankOutcome {
  int code = 0;
  bool failed = false;
  std::string message;
};

// Agrees on the job's exit code (the largest error code if any rank failed, else the largest
// return code), then rank 0 prints the message of the lowest failing rank. Collective on `comm`.
int finish(MPI_Comm comm, const RankOutcome& o, bool root) {
  const int error_code = o.failed ? o.code : 0;
  const auto timeout = o.failed ? std::chrono::milliseconds(10'000) : std::chrono::milliseconds(std::chrono::hours(24 * 366));
  const int agreed_error = agree(comm, error_code, timeout);
  if (agreed_error < 0) abort_job(o.code, fmt::format("[{}] {}", rank_tag(), o.message));
  int rc = o.failed ? 0 : o.code;
  int agreed_rc = 0;
  MPI_Allreduce(&rc, &agreed_rc, 1, MPI_INT, MPI_MAX, comm);
  if (agreed_error == 0) return agreed_rc;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const int mine = o.failed ? rank : std::numeric_limits<int>::max();
  int speaker = 0;
  MPI_Allreduce(&mine, &speaker, 1, MPI_INT, MPI_MIN, comm);
  std::string message = o.message;
  if (speaker != 0) {  // the lowest failing rank tells rank 0 why
    if (rank == speaker) {
      const std::string tag = fmt::format("[{}]", rank_tag());
      const std::string tagged = message.find(tag) == std::string::npos ? fmt::format("{} {}", tag, message) : message;
      MPI_Send(tagged.data(), static_cast<int>(tagged.size()), MPI_CHAR, 0, 0, comm);
    } else if (root) {
      MPI_Status st;
      MPI_Probe(speaker, 0, comm, &st);
      int n = 0;
      MPI_Get_count(&st, MPI_CHAR, &n);
      message.assign(static_cast<std::size_t>(n), '\0');
      MPI_Recv(message.data(), n, MPI_CHAR, speaker, 0, comm, MPI_STATUS_IGNORE);
    }
  }
  if (root) {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
  }
  return agreed_error;
}

// The Google Benchmark flags are split off before parsing; they are listed here for --help only.
void add_gbench_help(CLI::App& app) {
  static std::string ignored;
  const char* group = "Google Benchmark (each rank-max sample one repetition; mean/median/stddev/cv aggregates)";
  for (const auto& [flag, what] : std::initializer_list<std::pair<const char*, const char*>>{
           {"--benchmark_format", "=console|json|csv: Google Benchmark's report on stdout (json/csv: the binary's "
                                  "own text goes to stderr)"},
           {"--benchmark_out", "=FILE: also write Google Benchmark's report to FILE"},
           {"--benchmark_out_format", "=json|console|csv: the format of --benchmark_out (default json)"},
           {"--benchmark_filter", "=REGEX: measure and report only the benchmarks whose names match (-REGEX: "
                                  "those that do not)"},
           {"--benchmark_list_tests", "=true: print the benchmark names and measure nothing (where the binary "
                                      "knows them before measuring)"},
           {"--benchmark_time_unit", "=ns|us|ms|s: the unit of every time (default: per benchmark, the largest "
                                     "unit in which its median is >= 1; give it when comparing runs, as compare.py "
                                     "skips a benchmark whose unit differs between two files)"},
           {"--benchmark_report_aggregates_only", "=true: report only mean, median, stddev and cv"},
           {"--benchmark_display_aggregates_only", "=true: display only the aggregates (the file gets all)"},
           {"--benchmark_color", "=auto|true|false; also --benchmark_counters_tabular=true and "
                                 "--benchmark_context=KEY=VALUE,..., as in Google Benchmark"}})
    app.add_option(flag, ignored, what)->group(group);
}

// More ranks on this node than cores: every timing then includes time-slicing.
void warn_oversubscribed(const MpiEnvironment& env) {
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (env.local_rank() == 0 && cores > 0 && env.local_size() > cores)
    std::fprintf(stderr,
                 "warning: %d ranks share %ld cores on %s: ranks take turns on the CPU, so times include "
                 "scheduling delays (use at most %ld ranks per node for meaningful host timings)\n",
                 env.local_size(), cores, env.host().c_str(), cores);
}

}  // namespace

TimingOptions timing_from(const CommonOptions& o) {
  return TimingOptions{o.warmup, o.iterations, o.align == "barrier"};
}

void warn_if_gpu_sized(const Context& ctx, const CommonOptions& o, double flops_per_iteration,
                       const std::string& hint) {
  if (ctx.world.backend() != Backend::host) return;
  constexpr double kCpuFlops = 2e10;  // per rank: optimistic for one core, so the time is a floor
  const double seconds = flops_per_iteration * (o.warmup + o.iterations) / kCpuFlops;
  if (seconds < 60) return;
  // The estimate is the same on every rank (same flags, same geometry): every rank refuses alike.
  if (seconds > kAskAboveSeconds && !o.yes)
    throw UsageError(fmt::format(
        "this geometry is GPU-sized: about {:.3g} GFLOP per rank per timed iteration, {} iterations; on the host "
        "backend the run takes {} or more. Pass --yes to run it anyway, or shrink it for a run of seconds, e.g. {}",
        flops_per_iteration / 1e9, o.warmup + o.iterations, cli::format_duration(seconds), hint));
  if (!ctx.is_root()) return;
  std::fprintf(stderr,
               "warning: this geometry is GPU-sized: about %.3g GFLOP per rank per timed iteration, %d iterations; "
               "on the host backend the run takes %s or more. For a run of seconds shrink it, e.g. %s\n",
               flops_per_iteration / 1e9, o.warmup + o.iterations, cli::format_duration(seconds).c_str(), hint.c_str());
  std::fflush(stderr);
}

std::FILE* text_stream(const CommonOptions& o) {
  return (o.json == "-" || o.csv == "-" || o.markdown == "-" || o.gbench.takes_stdout()) ? stderr : stdout;
}

namespace {

// The arguments (argv[0] left out) and every input file read so far with its digest, one per
// line: what two ranks of one job must share.
std::string run_fingerprint(const std::vector<std::string>& cli_args, const std::vector<std::string>& gb_args) {
  std::string out;
  for (std::size_t i = 1; i < cli_args.size(); ++i) out += "arg\t" + cli_args[i] + "\n";
  for (const auto& a : gb_args) out += "arg\t" + a + "\n";
  for (const auto& f : input::files_read()) out += fmt::format("file\t{}\t{:016x}\n", f.origin, f.digest);
  return out;
}

// What differs between this rank's fingerprint and rank 0's, in words ("" when they agree).
std::string fingerprint_difference(const std::string& mine, const std::string& root) {
  if (mine == root) return {};
  auto lines = [](const std::string& t) {
    std::vector<std::string> v;
    std::size_t b = 0;
    for (std::size_t e; (e = t.find('\n', b)) != std::string::npos; b = e + 1) v.push_back(t.substr(b, e - b));
    return v;
  };
  const auto a = lines(mine), r = lines(root);
  std::string last_flag;
  for (std::size_t i = 0; i < std::max(a.size(), r.size()); ++i) {
    const std::string x = i < a.size() ? a[i] : "(nothing)", y = i < r.size() ? r[i] : "(nothing)";
    const bool is_arg = x.rfind("arg\t", 0) == 0;
    const std::string xv = x.substr(x.find('\t') + 1), yv = y.substr(y.find('\t') + 1);
    if (x == y) {
      if (is_arg && xv.rfind("-", 0) == 0) last_flag = xv;
      continue;
    }
    if (is_arg || y.rfind("arg\t", 0) == 0) {
      const std::string where = xv.rfind("-", 0) == 0 || last_flag.empty() ? "" : fmt::format(" (the value of {})", last_flag);
      return fmt::format("its argument '{}'{} is '{}' on rank 0", xv, where, yv);
    }
    const std::string file = xv.substr(0, xv.rfind('\t'));
    return fmt::format("{}: its bytes differ from the file rank 0 read under that name", file);
  }
  return "its arguments differ";
}

}  // namespace

int mpi_main_impl(int argc, char** argv, const BinaryInfo& info,
                  const std::function<void(CLI::App&)>& add_flags,
                  const std::function<void()>& validate,
                  const std::function<const CommonOptions&()>& common,
                  const std::function<int(Context&)>& run) {
  MpiEnvironment env(&argc, &argv);
  const bool root = env.world_rank() == 0;
  MPI_Comm agree_comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &agree_comm);
  std::vector<std::string> all_args(argv, argv + argc);
  auto [gb_args, cli_args] = split_gbench_args(all_args);

  // ---- parse + validate: identical input on every rank, but agree anyway ----------------
  CLI::App app(info.description);
  cli::init_app(app, info.name);
  add_common_options(app, const_cast<CommonOptions&>(common()));
  add_flags(app);
  add_gbench_help(app);
  if (!info.examples.empty()) app.footer(info.examples);
  int code = 0;
  std::string message;
  try {
    std::vector<std::string> rev(cli_args.rbegin(), cli_args.rend() - 1);  // CLI11 wants reversed, no argv[0]
    // First: a value given after a space (--benchmark_format json) would otherwise reach CLI11
    // as a stray argument.
    const_cast<CommonOptions&>(common()).gbench = parse_gbench_flags(gb_args);
    if (common().gbench.list_tests && !info.selects_before_timing)
      throw UsageError(fmt::format(
          "--benchmark_list_tests: {} names its benchmarks only as it measures them; read the names from a run's "
          "--benchmark_format=json (--benchmark_filter then selects which are reported)", info.name));
    app.parse(rev);
    validate();
  } catch (const CLI::CallForHelp&) {
    if (root) std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    if (root) std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    if (root) std::printf("%s\n", e.what());
    return 0;
  } catch (const CLI::ParseError& e) {
    code = 2;
    message = fmt::format("{}: {}\nRun with --help for usage.", info.name, cli::parse_error_text(app, e));
  } catch (const UsageError& e) {
    code = 2;
    message = fmt::format("{}: {}", info.name, e.what());
  } catch (const std::exception& e) {
    code = 2;
    message = fmt::format("{}: {}", info.name, e.what());
  }
  const int agreed = agree(agree_comm, code, std::chrono::seconds(10));
  if (agreed != 0) {
    // Input is the same on every rank, so usually all fail alike: rank 0 speaks for them. A
    // rank that failed where rank 0 did not (a file only it cannot read) speaks for itself.
    int root_failed = root ? code : 0;
    MPI_Bcast(&root_failed, 1, MPI_INT, 0, agree_comm);
    if (code != 0 && (root || !root_failed))
      std::fprintf(stderr, "%s%s\n", root ? "" : fmt::format("[{}] ", rank_tag()).c_str(), message.c_str());
    if (agreed < 0) MPI_Abort(MPI_COMM_WORLD, 2);
    return agreed;
  }

  // ---- ranks agree before they work -----------------------------------------------------
  // Every rank must run rank 0's configuration: the same arguments and the same bytes in every
  // input file read while parsing. A rank that differs is exit 2 on every rank, the lowest such
  // rank naming itself and the argument or file; never a deadlock in a mismatched collective.
  {
    const std::string mine = run_fingerprint(cli_args, gb_args);
    std::string root_text = mine;
    int n = static_cast<int>(root_text.size());
    MPI_Bcast(&n, 1, MPI_INT, 0, agree_comm);
    root_text.resize(static_cast<std::size_t>(n));
    MPI_Bcast(root_text.data(), n, MPI_CHAR, 0, agree_comm);
    const std::string diff = root ? std::string() : fingerprint_difference(mine, root_text);
    int rank = 0, size = 1;
    MPI_Comm_rank(agree_comm, &rank);
    MPI_Comm_size(agree_comm, &size);
    int mine_rank = diff.empty() ? size : rank, first = size;
    MPI_Allreduce(&mine_rank, &first, 1, MPI_INT, MPI_MIN, agree_comm);
    if (first < size) {
      if (rank == first)
        std::fprintf(stderr, "%s: rank %d does not run rank 0's configuration: %s\n", info.name.c_str(), rank,
                     diff.c_str());
      return 2;
    }
  }

  // ---- run -----------------------------------------------------------------------------
  // `world` outlives the handlers below: a rank that fails alone must reach MPI_Abort without
  // first running communicator destructors (NCCL's destroy is collective and would block).
  std::unique_ptr<Communicator> world;
  RankOutcome outcome;
  try {
    const Backend backend = resolve_backend(parse_backend(common().backend), env);
    if (backend == Backend::host) reject_cuda_only_flags(app);
    if (root) warn_oversubscribed(env);
    world = make_world(backend, env, NcclSettings{common().nvlink_centric_sched});
    set_wait_timeout(world->device(), common().timeout_s);
    world->device().set_ranges(common().nvtx == "on");
    std::unique_ptr<TraceRecorder> trace;
    if (!common().trace.empty()) trace = std::make_unique<TraceRecorder>(*world, common().trace_iterations);
    Context ctx{env, *world, info.name, all_args};
    outcome.code = run(ctx);
    world->device().synchronize_all();
    if (trace)
      trace->write(common().trace, {{"binary", info.name}, {"argv", all_args},
                                    {"backend", std::string(to_string(world->backend()))}, {"nvtx", common().nvtx}});
  } catch (const UsageError& e) {
    // Bad input found once the run began (a file read, a grid that does not fit the world):
    // usually every rank finds it; exit 2 everywhere with one message.
    outcome = {kExitUsage, true, fmt::format("{}: {}", info.name, e.what())};
  } catch (const std::exception& e) {
    // A runtime failure (a write to a full disk, a failed library call): exit 1 everywhere, the
    // reason printed once by rank 0. Messages from the check macros already start with the rank tag.
    std::string what = e.what();
    const std::string tag = fmt::format("[{}] ", rank_tag());
    if (what.rfind(tag, 0) == 0) what.erase(0, tag.size());
    outcome = {kExitFailure, true, fmt::format("{}: {}fatal: {}", info.name, tag, what)};
  }
  // Every rank leaves with the same code, agreed on the private communicator. A rank that failed
  // waits a bounded time for the others (they may be stuck in a collective it left: then the job
  // is aborted, so nobody waits forever); a rank that did not fail waits as long as it takes.
  return finish(agree_comm, outcome, root);
}

nlohmann::json make_document(Context& ctx, const Runner& runner, const nlohmann::json& config,
                             const std::vector<reports::Measurement>& results,
                             const nlohmann::json& extra) {
  nlohmann::json doc;
  doc["schema"] = reports::kSchema;
  doc["binary"] = ctx.binary;
  auto context = provenance(ctx.world, ctx.env);
  context["argv"] = ctx.argv;
  context["timing"] = runner.describe();
  doc["context"] = context;
  doc["config"] = config;
  auto arr = nlohmann::json::array();
  for (const auto& m : results) arr.push_back(reports::to_json(m));
  doc["results"] = arr;
  for (auto it = extra.begin(); it != extra.end(); ++it) doc[it.key()] = it.value();
  doc["complete"] = true;
  return doc;
}

void write_partial_outputs(Context& ctx, const CommonOptions& o, nlohmann::json doc,
                           const std::vector<reports::Measurement>& results, std::size_t steps_done,
                           std::size_t steps_total) {
  if (!ctx.is_root() || o.gbench.list_tests) return;
  auto arr = nlohmann::json::array();
  for (const auto& m : results) arr.push_back(reports::to_json(m));
  doc["results"] = arr;
  doc["complete"] = false;
  doc["progress"] = {{"steps_done", steps_done}, {"steps_total", steps_total}};
  // CSV first: a run stopped between the two writes leaves a CSV with at least what the JSON's
  // "progress" counts.
  if (!o.csv.empty() && o.csv != "-") cli::write_output(o.csv, reports::results_to_csv(results));
  if (!o.json.empty() && o.json != "-") cli::write_output(o.json, json_text(doc, 1) + "\n");
}

void write_outputs(Context& ctx, const CommonOptions& o, const nlohmann::json& doc,
                   const std::vector<reports::Measurement>& results, const std::string& markdown) {
  if (!ctx.is_root()) return;
  if (!o.gbench.list_tests) {
    if (!o.json.empty()) cli::write_output(o.json, json_text(doc, 1) + "\n");
    if (!o.csv.empty()) cli::write_output(o.csv, reports::results_to_csv(results));
    if (!o.markdown.empty()) cli::write_output(o.markdown, markdown);
  }
  if (o.gbench.active())
    report_to_gbench(o.gbench, {ctx.binary, std::string(to_string(ctx.world.backend())), ctx.world.size(),
                                doc["context"].value("timing", nlohmann::json::object()), o.iterations},
                     results);
}

}  // namespace layerbench::harness
