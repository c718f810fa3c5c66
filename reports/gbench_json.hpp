#pragma once
// Google Benchmark JSON (`--benchmark_format=json`, `--benchmark_out=FILE`): the one reader of its
// `benchmarks[]` entries, used by every tool that takes such a file (layerbench-gate,
// layerbench-history add, layerbench-report). One rule for times: `time_unit` is ns, us, ms or s
// (absent: ns, Google Benchmark's default); any other unit is a UsageError naming the file, the
// benchmark and the unit, so every tool exits 2 on it.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace layerbench::reports {

// One entry of `benchmarks[]`, its fields checked and its time unit resolved.
struct GbenchEntry {
  const nlohmann::json* raw = nullptr;  // the entry itself (counters, iterations, ...)
  std::string name;                     // "name"
  std::string run_name;                 // "run_name", else "name"
  bool aggregate = false;               // run_type "aggregate" (mean, median, stddev, cv)
  std::string aggregate_name;           // for an aggregate
  int repetition_index = 0;
  bool error = false;                   // error_occurred
  bool percentage = false;              // aggregate_unit "percentage" (cv): not a time
  std::string time_unit = "ns";
  double ns_per_unit = 1;

  // real_time or cpu_time (or any numeric field named by `key`) in nanoseconds when it is a time,
  // as is when `key` is not a time field; nullopt when absent or not a number.
  std::optional<double> value_ns(const std::string& key) const;
};

// Nanoseconds per `unit` (ns, us, ms, s); anything else is a UsageError "WHERE: unknown time_unit ...".
double gbench_ns_per_unit(const std::string& unit, const std::string& where);

// Whether `key` is one of the entry fields given in time_unit (real_time, cpu_time).
bool is_gbench_time_field(const std::string& key);

// Every entry of `doc["benchmarks"]` in order; `path` names the file in messages. A non-object
// entry, an entry without a name or an unknown unit throws (UsageError for the unit,
// std::runtime_error for the rest, both exit 2 in every tool).
std::vector<GbenchEntry> read_gbench_entries(const nlohmann::json& doc, const std::string& path);

}  // namespace layerbench::reports
