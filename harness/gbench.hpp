#pragma once
// Google Benchmark integration. Timing is never left to Google Benchmark: it would choose
// iteration counts per rank, and ranks issuing different numbers of collectives hang. Instead
// every measurement is timed by the Runner on all ranks; rank 0 then registers one benchmark
// per measurement (per op, size and placement) with manual time, Iterations(1) and one
// repetition per rank-max sample, so Google Benchmark computes its own aggregates (mean,
// median, stddev, cv) and its console/JSON/CSV reporters, --benchmark_report_aggregates_only
// and tools/compare.py all work on it.
//   real_time  the sample, in --benchmark_time_unit or else the largest unit in which the
//              measurement's median is >= 1 (µs operations never print as 0 ms);
//   cpu_time   set equal to real_time: the replay loop's own CPU time means nothing, and the
//              samples are wall times of work that ran on every rank (and the device);
//   counters   bytes_per_second (= algbw), algbw, busbw (bytes/s) and FLOP/s of each sample,
//              from the measurement's declared work (reports::rates_of); none when no work is
//              declared;
//   context    binary, layerbench version, git sha, backend, ranks and the timing method.
#include "harness/gbench_flags.hpp"
#include "reports/result.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace layerbench::harness {

// "binary/name[/group][/key:value...]": stable, filterable, one per (op, size, placement).
// A param "op" equal to the name is left out (it would repeat it).
std::string gbench_name(const std::string& binary, const reports::Measurement& m);
// The name Google Benchmark reports and filters on: gbench_name + "/iterations:1/repeats:N/manual_time".
std::string gbench_run_name(const std::string& binary, const reports::Measurement& m, int repetitions);

// Whether --benchmark_filter selects any of `ids` (name, group and params; no samples needed),
// each named as gbench_run_name names it with `repetitions`. Never with --benchmark_list_tests.
bool gbench_selects_any(const GbenchOptions& gb, const std::string& binary,
                        const std::vector<reports::Measurement>& ids, int repetitions);

// The largest unit in which `median_ms` is at least 1 (ns below 1 ns; s from 1 s up).
GbTimeUnit auto_time_unit(double median_ms);

// The per-sample counters (name, value): bytes_per_second, algbw, busbw, FLOP/s, each present
// only when the measurement declares the work it derives from.
std::vector<std::pair<std::string, double>> gbench_counters(const reports::Measurement& m, double sample_ms);

struct GbenchContext {
  std::string binary;
  std::string backend;
  int ranks = 0;
  nlohmann::json timing;  // Runner::describe()
  int repetitions = 0;    // samples per measurement (--iterations), for the names of --benchmark_list_tests
};

// Rank 0 only. Reports every measurement with samples (those the filter selects) through
// Google Benchmark; with --benchmark_list_tests prints the names instead. --benchmark_out is
// written atomically (Google Benchmark writes a temporary file beside it, renamed when complete).
void report_to_gbench(const GbenchOptions& gb, const GbenchContext& ctx,
                      const std::vector<reports::Measurement>& results);

}  // namespace layerbench::harness
