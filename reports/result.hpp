#pragma once
// The layerbench result model: what every binary measures, independent of how it is written.
//
// A result file (layerbench JSON, schema "layerbench/1") is
//   { "schema": "layerbench/1", "binary": "layerbench-coll",
//     "context": { date, host, git_sha, backend, world_size, argv, versions{...}, devices[...],
//                  timing{clock, rank_combine, align, warmup, iterations} },
//     "config":  { binary-specific configuration },
//     "results": [ Measurement... ],            // every timed thing, every sample kept
//     ...binary-specific sections (e.g. "components" for layerbench-moe) }
// A Measurement is
//   { "name": "all_gather", "group": "...", "params": {..}, "metrics": {..},
//     "samples_ms": [...], "median_ms", "min_ms", "max_ms", "mean_ms", "p10_ms", "p90_ms", "cv" }
// samples_ms are per-iteration times, each already the maximum over ranks.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace layerbench::reports {

struct Measurement {
  std::string name;               // component / op name, e.g. "ep_dispatch", "all_gather"
  std::string group;              // optional grouping key, e.g. "sp", "usp2+cp2/S=16384"
  nlohmann::json params = nlohmann::json::object();   // e.g. {"bytes": 1048576, "in_place": false}
  nlohmann::json metrics = nlohmann::json::object();  // derived figures, e.g. {"busbw_gbps": 231.0}
  std::vector<double> samples_ms;  // per-iteration rank-max times
};

// Adds the summary fields (median_ms, min_ms, ...) computed from samples_ms.
nlohmann::json to_json(const Measurement& m);
// Inverse of to_json (summary fields are recomputed, not trusted). Throws std::runtime_error.
Measurement measurement_from_json(const nlohmann::json& j);

// RFC 4180 cell: quoted (quotes doubled) when it holds a comma, quote or line break.
std::string csv_cell(const std::string& s);

// One row per measurement: name, group, params as k=v;..., the summary (ms) and metrics.
std::string results_to_csv(const std::vector<Measurement>& results);

inline constexpr const char* kSchema = "layerbench/1";

}  // namespace layerbench::reports
