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
//     "role": "part", "parent": "routed_branch", "instances": 1,
//     "work": {"flops": .., "bytes": .., "bus_factor": ..},
//     "rates": {"flop_per_s": .., "algbw_bytes_per_s": .., "busbw_bytes_per_s": ..},
//     "samples_ms": [...], "median_ms", "min_ms", "max_ms", "mean_ms", "p10_ms", "p90_ms", "cv" }
// samples_ms are per-iteration times, each already the maximum over ranks.
//
// The measurement contract: a measurement declares its work (FLOPs, bytes moved, the bus factor
// of a collective) and its role; every rate, share and composition is derived from those, once,
// here and in reports/profile.hpp — never from the names of the components.
#include "reports/units.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace layerbench::reports {

enum class Role {
  part,           // a part of `parent` (or of the group's total when parent is empty)
  total,          // the whole the parts of its group compose (one per group)
  communication,  // a part that moves data (a collective); shares and compositions like a part
  reference,      // a yardstick measured beside the rest (a dense GEMM): no share
  stack,          // `instances` applications of something (an L-layer stack): no share
  probe,          // measured alone for a derived figure (an isolated collective, an overlap probe)
};
std::string to_string(Role r);
Role parse_role(const std::string& s);  // std::runtime_error on an unknown role

struct Work {
  double flops = 0;       // per call, this rank
  double bytes = 0;       // bytes moved per call (a collective: nccl-tests' size convention)
  double bus_factor = 0;  // busbw = algbw x bus_factor (nccl-tests); 0 = not a collective
  bool empty() const { return flops <= 0 && bytes <= 0; }
};

// The energy of a measurement, declared in joules: NVML's total-energy counters of every rank's
// device, read before the first and after the last timed iteration (so the window holds the
// synchronisations between iterations too). Absent (NaN; null in JSON) where there is no counter
// (the host backend): never zero.
struct Energy {
  double joules = std::numeric_limits<double>::quiet_NaN();   // over the window, all devices
  double seconds = std::numeric_limits<double>::quiet_NaN();  // the window's wall time (rank-max)
  int calls = 0;    // timed iterations in the window
  int devices = 0;  // devices summed (one per rank)
  bool present() const { return std::isfinite(joules) && calls > 0 && devices > 0; }
  double per_instance_j(int instances) const;  // joules / calls / instances (NaN when absent)
  double mean_w() const;                       // mean power per device over the window (NaN when absent)
};

struct Measurement {
  std::string name;               // component / op name, e.g. "ep_dispatch", "all_gather"
  std::string group;              // optional grouping key, e.g. "sp", "usp2+cp2/S=16384"
  nlohmann::json params = nlohmann::json::object();   // e.g. {"bytes": 1048576, "in_place": false}
  nlohmann::json metrics = nlohmann::json::object();  // binary-specific figures (not rates)
  std::vector<double> samples_ms;  // per-iteration rank-max times
  Role role = Role::part;
  std::string parent;  // name of the parent measurement in the same group (part, communication)
  int instances = 1;   // stack: applications per sample; per-instance time = sample / instances
  Work work;
  Energy energy;
  // A reference timed in the same iterations (interleaved with this measurement): its name and
  // its samples, aligned with samples_ms by iteration. Ratios to the reference are taken from
  // these pairs (reports/derived.hpp), not from two runs at different moments.
  std::string reference;
  std::vector<double> reference_samples_ms;
};

// Rates derived from a measurement's declared work and its median (per instance); NaN where the
// work is not declared.
struct Rates {
  double median_ms = 0;  // per instance
  double flop_per_s = 0, algbw_bytes_per_s = 0, busbw_bytes_per_s = 0;
};
Rates rates_of(const Measurement& m);
double median_ms(const Measurement& m);  // NaN without samples

// Adds the summary fields (median_ms, min_ms, ...) computed from samples_ms.
nlohmann::json to_json(const Measurement& m);
// Inverse of to_json (summary fields are recomputed, not trusted). Throws std::runtime_error.
Measurement measurement_from_json(const nlohmann::json& j);


// A measurement's params as k=v;... (strings bare, numbers shortest: 0 not 0.0), the one text
// of params in every printer.
std::string params_text(const nlohmann::json& params);

// One row per measurement: name, group, role, parent, params as k=v;..., the summary (ms), the
// declared work and the derived rates (numbers; units in the header) and the metrics.
std::string results_to_csv(const std::vector<Measurement>& results);

inline constexpr const char* kSchema = "layerbench/2";  // 2: roles, work and rates
inline constexpr const char* kSchemaV1 = "layerbench/1";  // read (roles inferred), never written

}  // namespace layerbench::reports
