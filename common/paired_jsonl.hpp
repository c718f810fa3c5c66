#pragma once
// The paired measurements of a study in JSON Lines: what `layerbench-ab run` writes, or any JSONL
// in which a record with "pair" and "arm" is a run. Read in one pass, line by line, without
// keeping the records (json_record), so that 10^6 pairs take seconds. The pairing rule is
// `layerbench-ab analyze`'s: a pair counts once, from its first attempt in which every arm
// succeeded; a failed arm voids that attempt and never pairs with another attempt's run.
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace layerbench::jsonl {

struct PairedRuns {
  nlohmann::json header = nlohmann::json::object();  // the first record that is not a run
  std::string metric;               // what the values are: `metric`, else the study's own (its name)
  std::string unit;                 // the unit its --metric spec declared or implies ("" = unknown)
  std::vector<long long> pair_ids;  // one per complete pair, ascending
  std::vector<double> base, candidate;
};

// `metric` selects the value when runs carry several; empty picks the study's own (the header's
// "metric" or "metric_name", the first run's, or the first run's only entry of "metrics"). Throws
// std::runtime_error naming the file and line: invalid JSON (a torn last line is skipped), a
// record that is not an object, a "pair" that is not an integer, an arm other than base,
// candidate or candidateN, a duplicate run, no run with the metric, a negative
// value, no complete pair.
// The name and unit a `layerbench-ab run --metric` spec gives its metric: "lat(ms)=regex:..." ->
// {lat, ms}; "wall" -> {wall, s}; "peak_rss" -> {peak_rss, KiB}; "regex:..." -> {metric, ""}. The
// one naming rule (study/metric.cpp applies it when parsing a spec).
struct MetricName {
  std::string name, unit;
  bool unit_declared = false;  // NAME(UNIT)=
};
MetricName metric_spec_name(std::string_view spec);

// `candidate_arm` picks the arm compared against base in a study of more arms ("candidate2", ...).
PairedRuns read_paired_runs(std::string_view text, const std::string& path, const std::string& metric = {},
                            const std::string& candidate_arm = "candidate");

}  // namespace layerbench::jsonl
