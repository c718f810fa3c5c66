#pragma once
// The Google Benchmark flags of every MPI-launched binary, split off the command line and checked
// at start-up, before any work: an unknown --benchmark_* flag or a bad value is a UsageError
// (exit 2 on every rank), never Google Benchmark's own exit after the run. Google Benchmark only
// reports here (the Runner times), so the flags that steer its timing (--benchmark_min_time,
// --benchmark_repetitions, ...) are rejected with a pointer to --warmup / --iterations.
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace layerbench::harness {

enum class GbTimeUnit { ns, us, ms, s };
const char* to_string(GbTimeUnit u);

struct GbenchOptions {
  std::vector<std::string> args;  // the --benchmark_* flags as given (passed on to Google Benchmark)
  std::string format = "console";  // --benchmark_format: console | json | csv (standard output)
  std::string out;                 // --benchmark_out
  std::string out_format = "json"; // --benchmark_out_format
  std::string filter;              // --benchmark_filter as given ("" = all)
  bool list_tests = false;
  std::optional<GbTimeUnit> time_unit;  // --benchmark_time_unit; unset: chosen per benchmark
  std::string color = "auto";
  bool counters_tabular = false;

  bool active() const { return !args.empty(); }
  // Google Benchmark writes a machine-readable document (or the list of names) on standard
  // output: the binary's own text then goes to standard error.
  bool takes_stdout() const { return active() && (format != "console" || list_tests); }
  // Whether Google Benchmark's filter selects the benchmark named `full_name` (with its
  // "/iterations:1/repeats:N/manual_time" suffix), as Google Benchmark matches it.
  bool selects(const std::string& full_name) const;

 private:
  friend GbenchOptions parse_gbench_flags(const std::vector<std::string>& flags);
  std::optional<std::regex> re_;
  bool negative_ = false;
};

// (--benchmark_* flags, everything else); argv[0] stays first in the second.
std::pair<std::vector<std::string>, std::vector<std::string>> split_gbench_args(
    const std::vector<std::string>& argv);

// Checks every flag; throws UsageError naming the flag and what it accepts. The output path of
// --benchmark_out is checked with the other outputs (validate_common).
GbenchOptions parse_gbench_flags(const std::vector<std::string>& flags);

}  // namespace layerbench::harness
