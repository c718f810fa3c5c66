#pragma once
// The paired measurements of a study in JSON Lines: what `layerbench-ab run` writes, or any JSONL
// in which a record with "pair" and "arm" is a run. Read in one pass, line by line, without
// keeping the records (json_record), so that 10^6 pairs take seconds. The pairing rule is
// `layerbench-ab analyze`'s: a pair counts once, from its first attempt in which both arms
// succeeded; a failed arm voids that attempt and never pairs with another attempt's run.
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace layerbench::jsonl {

struct PairedRuns {
  nlohmann::json header = nlohmann::json::object();  // the first record that is not a run
  std::string metric;               // what the values are: `metric`, else the study's own
  std::vector<long long> pair_ids;  // one per complete pair, ascending
  std::vector<double> base, candidate;
};

// `metric` selects the value when runs carry several; empty picks the study's own (the header's
// "metric" or "metric_name", the first run's, or the first run's only entry of "metrics"). Throws
// std::runtime_error naming the file and line: invalid JSON (a torn last line is skipped), a
// record that is not an object, a "pair" that is not an integer, an arm other than base,
// candidate (candidate2, ... are skipped), a duplicate run, no run with the metric, a negative
// value, no complete pair.
PairedRuns read_paired_runs(std::string_view text, const std::string& path, const std::string& metric = {});

}  // namespace layerbench::jsonl
