#pragma once
// The common main of every MPI-launched binary:
//   MPI start-up -> Google Benchmark flags split off -> CLI11 parse -> validate (UsageError)
//   -> agreement on errors (exit 2 on every rank, rank 0 prints, no hang) -> backend + world
//   -> run -> outputs -> agreement on how the run ended: bad input found during the run is exit 2
//   on every rank, a runtime failure exit 1 on every rank, the reason printed once by rank 0. Only
//   a rank stuck in a collective another rank left is aborted (after a bounded wait).
#include "harness/options.hpp"
#include "harness/runner.hpp"
#include "collectives/runtime.hpp"
#include "reports/result.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace layerbench::harness {

struct Context {
  MpiEnvironment& env;
  Communicator& world;
  std::string binary;
  std::vector<std::string> argv;    // as given (for the result file)
  bool is_root() const { return world.rank() == 0; }
};

struct BinaryInfo {
  std::string name;         // e.g. "layerbench-coll"
  std::string description;  // one line for --help
  // The binary knows its Google Benchmark names before measuring (it skips what
  // --benchmark_filter leaves out and honours --benchmark_list_tests); otherwise
  // --benchmark_list_tests is a usage error rather than a whole run whose results are dropped.
  bool selects_before_timing = false;
  std::string examples;  // the EXAMPLES block at the end of --help (and of the man page)
};

int mpi_main_impl(int argc, char** argv, const BinaryInfo& info,
                  const std::function<void(CLI::App&)>& add_flags,
                  const std::function<void()>& validate,
                  const std::function<const CommonOptions&()>& common,
                  const std::function<int(Context&)>& run);

// Config must expose `CommonOptions common;`. add_flags(app, cfg) registers the binary's flags,
// validate(cfg) throws UsageError, run(ctx, cfg) returns the exit code (collective).
template <class Config>
int mpi_main(int argc, char** argv, const BinaryInfo& info,
             const std::function<void(CLI::App&, Config&)>& add_flags,
             const std::function<void(const Config&)>& validate,
             const std::function<int(Context&, const Config&)>& run) {
  Config cfg;
  return mpi_main_impl(
      argc, argv, info, [&](CLI::App& app) { add_flags(app, cfg); },
      [&] {
        validate_common(cfg.common);
        validate(cfg);
      },
      [&]() -> const CommonOptions& { return cfg.common; },
      [&](Context& ctx) { return run(ctx, static_cast<const Config&>(cfg)); });
}

TimingOptions timing_from(const CommonOptions& o);

// Host backend only: when `flops_per_iteration` (a rough count of one timed iteration of
// everything the run times, per rank) makes the run take over a minute even at an optimistic CPU
// rate, rank 0 warns that the geometry is GPU-sized and names the flags (`hint`) that shrink it;
// over kAskAboveSeconds every rank refuses with a UsageError (exit 2) unless --yes was given.
inline constexpr double kAskAboveSeconds = 600;
void warn_if_gpu_sized(const Context& ctx, const CommonOptions& o, double flops_per_iteration,
                       const std::string& hint);

// Where a binary's text report goes: stdout, or stderr when --json/--csv/--markdown '-' took
// stdout (so that what is on stdout stays one parseable document).
std::FILE* text_stream(const CommonOptions& o);

// The layerbench JSON document (schema, binary, context, config, results); `extra` is merged in
// at the top level (e.g. "components"). Collective (gathers provenance); rank 0 writes.
nlohmann::json make_document(Context& ctx, const Runner& runner, const nlohmann::json& config,
                             const std::vector<reports::Measurement>& results,
                             const nlohmann::json& extra = nlohmann::json::object());

// Rank 0: --json and --csv with what has been measured so far, the JSON marked
// "complete": false with "progress": {"steps_done", "steps_total"}. Written atomically after
// each step of a long run, so an interrupted or aborted run leaves valid files of its finished
// steps. `doc` comes from make_document (made once, before the run: it is collective).
void write_partial_outputs(Context& ctx, const CommonOptions& o, nlohmann::json doc,
                           const std::vector<reports::Measurement>& results, std::size_t steps_done,
                           std::size_t steps_total);

// Rank 0: writes --json / --csv / --markdown as requested (markdown text given by the binary)
// and, when --benchmark_* flags were given, reports the measurements through Google Benchmark
// (manual time, one repetition per rank-max sample) so its JSON loads in compare.py.
void write_outputs(Context& ctx, const CommonOptions& o, const nlohmann::json& doc,
                   const std::vector<reports::Measurement>& results, const std::string& markdown);

}  // namespace layerbench::harness
