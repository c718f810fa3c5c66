#include "bench/harness/options.hpp"

#include "collectives/error.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

namespace layerbench::harness {

void add_common_options(CLI::App& app, CommonOptions& o) {
  app.add_option("--backend", o.backend, "auto (cuda when a GPU is visible), cuda (NCCL) or host (MPI)")
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed iterations before timing")->capture_default_str();
  app.add_option("--iterations", o.iterations, "timed iterations (the same on every rank)")
      ->capture_default_str();
  app.add_option("--json", o.json, "write layerbench JSON (config, provenance, every sample)");
  app.add_option("--csv", o.csv, "write one CSV row per measurement");
  app.add_option("--markdown", o.markdown, "write PR-ready markdown tables");
  app.add_option("--align", o.align, "barrier: align ranks before each iteration; none: free-running")
      ->capture_default_str();
  app.add_option("--timeout", o.timeout_s, "seconds a host wait may take before the job is aborted")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed for inputs and weights")->capture_default_str();
  app.add_flag("--nvlink-centric-sched", o.nvlink_centric_sched,
               "cuda: create the NCCL communicator with config.nvlinkCentricSched = 1, as nccl-tests does "
               "(needs NCCL >= 2.28; NCCL applies it on compute capability 10.0 and newer, a no-op on Hopper)");
}

void validate_common(const CommonOptions& o) {
  if (o.backend != "auto" && o.backend != "cuda" && o.backend != "host")
    throw UsageError(fmt::format("--backend: unknown backend '{}' (expected auto, cuda or host)", o.backend));
  if (o.warmup < 0) throw UsageError(fmt::format("--warmup must be >= 0 (got {})", o.warmup));
  if (o.iterations < 1) throw UsageError(fmt::format("--iterations must be >= 1 (got {})", o.iterations));
  if (o.align != "barrier" && o.align != "none")
    throw UsageError(fmt::format("--align: expected barrier or none (got '{}')", o.align));
  for (const auto* path : {&o.json, &o.csv, &o.markdown}) {
    if (path->empty()) continue;
    // Fail at start-up, not after the whole run, when an output cannot be written.
    std::filesystem::path dir = std::filesystem::path(*path).parent_path();
    if (dir.empty()) dir = ".";
    if (!std::filesystem::is_directory(dir) || ::access(dir.c_str(), W_OK) != 0)
      throw UsageError(fmt::format("cannot write '{}': directory '{}' missing or not writable", *path, dir.string()));
  }
  if (!(o.timeout_s > 0)) throw UsageError(fmt::format("--timeout must be > 0 (got {})", o.timeout_s));
}

}  // namespace layerbench::harness
