#include "bench/harness/options.hpp"

#include "collectives/error.hpp"
#include "common/cli.hpp"
#include "common/output_file.hpp"

#include <fmt/format.h>

namespace layerbench::harness {

void add_common_options(CLI::App& app, CommonOptions& o) {
  app.add_option("--backend", o.backend, "auto (cuda when a GPU is visible), cuda (NCCL) or host (MPI)")
      ->capture_default_str();
  cli::add_int(app, "--warmup", o.warmup, "untimed iterations before timing", 0, kMaxIterations);
  cli::add_int(app, "--iterations", o.iterations, "timed iterations (the same on every rank)", 1, kMaxIterations);
  app.add_option("--json", o.json, "write layerbench JSON (config, provenance, every sample)");
  app.add_option("--csv", o.csv, "write one CSV row per measurement");
  app.add_option("--markdown", o.markdown, "write PR-ready markdown tables");
  app.add_option("--align", o.align, "barrier: align ranks before each iteration; none: free-running")
      ->capture_default_str();
  cli::add_real(app, "--timeout", o.timeout_s, "seconds a host wait may take before the job is aborted",
                num::RealRange::positive(kMaxTimeoutSeconds));
  cli::add_int(app, "--seed", o.seed, "seed for inputs and weights");
  app.add_flag("--nvlink-centric-sched", o.nvlink_centric_sched,
               "cuda: create the NCCL communicator with config.nvlinkCentricSched = 1, as nccl-tests does "
               "(needs NCCL >= 2.28; NCCL applies it on compute capability 10.0 and newer, a no-op on Hopper)");
}

void validate_common(const CommonOptions& o) {
  if (o.backend != "auto" && o.backend != "cuda" && o.backend != "host")
    throw UsageError(fmt::format("--backend: unknown backend '{}' (expected auto, cuda or host)", o.backend));
  if (o.align != "barrier" && o.align != "none")
    throw UsageError(fmt::format("--align: expected barrier or none (got '{}')", o.align));
  // Fail at start-up, not after the whole run, when an output cannot be written.
  check_output_paths({{"--json", &o.json}, {"--csv", &o.csv}, {"--markdown", &o.markdown}});
}

}  // namespace layerbench::harness
