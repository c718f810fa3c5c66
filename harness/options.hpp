#pragma once
// Flags every MPI-launched binary shares. Each binary's RunConfig embeds CommonOptions, adds its
// own flags, is validated once (validate() throws UsageError) and is immutable afterwards.
#include "harness/gbench_flags.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace layerbench::harness {

// Bounds of the shared numeric flags: every sample is kept, so iterations bound memory; a
// timeout beyond a week is a typo (and 1e12 s would overflow the clock).
inline constexpr int kMaxIterations = 10'000'000;
inline constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600.0;

struct CommonOptions {
  std::string backend = "auto";  // auto | cuda | host
  int warmup = 5;
  int iterations = 30;
  std::string json;      // layerbench JSON (every sample)
  std::string csv;       // one row per measurement
  std::string markdown;  // PR-ready tables
  std::string trace;     // Chrome trace-event JSON of the first traced iterations (harness/trace.hpp)
  int trace_iterations = 3;
  std::string nvtx = "on";  // on | off: NVTX ranges around every component (CUDA backend)
  std::string align = "barrier";  // barrier: host barrier before every timed iteration; none
  double timeout_s = 300;         // a host wait longer than this aborts the job
  std::uint64_t seed = 20261129;  // inputs and weights are drawn from it
  bool yes = false;  // run a host-backend geometry estimated to take over 10 minutes
  bool nvlink_centric_sched = false;  // cuda: ncclConfig_t.nvlinkCentricSched (NCCL >= 2.28, sm_100+)
  GbenchOptions gbench;  // the --benchmark_* flags (split off before parsing, not CLI11 options)
};

void add_common_options(CLI::App& app, CommonOptions& o);
// Puts a flag in the "CUDA backend only" group: given on the host backend, it is a usage error
// (reject_cuda_only_flags, called by the common main once the backend is known).
CLI::Option* mark_cuda_only(CLI::Option* opt);
void reject_cuda_only_flags(const CLI::App& app);
// Throws UsageError naming the offending flag.
void validate_common(const CommonOptions& o);

}  // namespace layerbench::harness
