#include "harness/options.hpp"

#include "common/cli/app.hpp"
#include "collectives/error.hpp"
#include "common/cli.hpp"
#include "common/output_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

namespace layerbench::harness {

void add_common_options(CLI::App& app, CommonOptions& o) {
  app.add_option("--backend", o.backend, "auto (cuda when a GPU is visible), cuda (NCCL) or host (MPI)")
      ->capture_default_str();
  cli::add_int(app, "--warmup", o.warmup, "untimed iterations before timing", 0, kMaxIterations);
  cli::add_int(app, "--iterations", o.iterations, "timed iterations (the same on every rank)", 1, kMaxIterations);
  cli::add_output_option(app, "--json", o.json, "layerbench JSON (config, context, every sample)");
  cli::add_output_option(app, "--csv", o.csv, "one CSV row per measurement");
  cli::add_output_option(app, "--markdown", o.markdown, "PR-ready markdown tables");
  cli::add_output_option(app, "--trace", o.trace,
                         "Chrome/Perfetto trace-event JSON of the first --trace-iterations timed iterations of every "
                         "measurement: a track per rank and stream, components, collectives (bytes, peers), barrier "
                         "waits, clocks aligned to rank 0 (open in ui.perfetto.dev or chrome://tracing)");
  cli::add_int(app, "--trace-iterations", o.trace_iterations, "timed iterations of each measurement in --trace", 1,
               kMaxIterations);
  app.add_option("--nvtx", o.nvtx, "on: an NVTX range around every component (CUDA backend; Nsight Systems shows "
                                   "the names); off: none")
      ->capture_default_str();
  app.add_option("--align", o.align, "barrier: align ranks before each iteration; none: free-running")
      ->capture_default_str();
  cli::add_real(app, "--timeout", o.timeout_s, "seconds a host wait may take before the job is aborted",
                num::RealRange::positive(kMaxTimeoutSeconds));
  cli::add_int(app, "--seed", o.seed, "seed for inputs and weights");
  app.add_flag("--yes,-y", o.yes, "run on the host backend even when the run is estimated to take over 10 minutes");
  mark_cuda_only(app.add_flag("--nvlink-centric-sched", o.nvlink_centric_sched,
               "cuda: create the NCCL communicator with config.nvlinkCentricSched = 1, as nccl-tests does "
               "(needs NCCL >= 2.28; NCCL applies it on compute capability 10.0 and newer, a no-op on Hopper)"));
}

namespace {
constexpr const char* kCudaGroup = "CUDA backend only";
}

CLI::Option* mark_cuda_only(CLI::Option* opt) { return opt->group(kCudaGroup); }

void reject_cuda_only_flags(const CLI::App& app) {
  std::vector<std::string> given;
  for (const CLI::Option* opt : app.get_options([](const CLI::Option* x) { return x->get_group() == kCudaGroup; }))
    if (opt->count() > 0) given.push_back(opt->get_name());
  if (given.empty()) return;
  const char* it = given.size() == 1 ? "it" : "them";
  throw UsageError(fmt::format("{}: only the CUDA backend uses {}; the host backend would ignore {} (drop {} or run "
                               "with --backend cuda)", fmt::join(given, ", "), it, it, it));
}

void validate_common(const CommonOptions& o) {
  if (o.backend != "auto" && o.backend != "cuda" && o.backend != "host")
    throw UsageError(fmt::format("--backend: unknown backend '{}' (expected auto, cuda or host)", o.backend));
  if (o.align != "barrier" && o.align != "none")
    throw UsageError(fmt::format("--align: expected barrier or none (got '{}')", o.align));
  if (o.nvtx != "on" && o.nvtx != "off")
    throw UsageError(fmt::format("--nvtx: expected on or off (got '{}')", o.nvtx));
  if (o.trace == "-")
    throw UsageError("--trace -: the trace is one JSON file read by Perfetto, not a stream; give a file name");
  // Fail at start-up, not after the whole run, when an output cannot be written.
  check_output_paths({{"--json", &o.json}, {"--csv", &o.csv}, {"--markdown", &o.markdown}, {"--trace", &o.trace},
                      {"--benchmark_out", &o.gbench.out}});
  if (o.gbench.active())
    for (const auto& [flag, path] : {std::pair{"--json", &o.json}, {"--csv", &o.csv}, {"--markdown", &o.markdown}})
      if (*path == "-")
        throw UsageError(fmt::format("{} - and Google Benchmark's report (--benchmark_format={}) would both write "
                                     "standard output: give {} a file, or --benchmark_out=FILE without "
                                     "--benchmark_format", flag, o.gbench.format, flag));
}

}  // namespace layerbench::harness
