#pragma once
// The topology advisor's model: a forward's predicted time from what one GPU and a collective
// sweep can measure (collectives/cost_model.hpp; the ranked section is reports/prediction.hpp).
// Pure host logic (tested on the host with committed results).
//   local work   attention (every Ring step's kernel calls and LSE merges) and pad_pack, from a
//                table timed on this GPU at the topology's local shapes (or read from a
//                layerbench-attn result file);
//   collectives  from layerbench-coll result files: the op's median and its p10-p90 spread
//                interpolated in bytes (log-log between neighbouring sizes; constant time below
//                the sweep, constant bandwidth above); from a sweep at another group size
//                through its bus bandwidth (time x f(n)/f(g), f the nccl-tests bus factor),
//                saying so; a Ring step (M bytes each way) as a 2-rank all_to_all of 2M bytes;
//   overlap      Ring: each step but the last takes max(compute, transfer);
//   interval     sum of the parts' p10 .. sum of their p90, widened by `margin` x median (what
//                the components do not show: clock drift under the power cap between the parts'
//                timings and the forward's, launch gaps between them).
#include "attention/topology.hpp"
#include "attention/workload.hpp"
#include "collectives/cost_model.hpp"
#include "reports/document.hpp"
#include "reports/inputs.hpp"
#include "reports/prediction.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace layerbench::attention {

using reports::Interval;
using reports::interval_of;
using reports::Prediction;

// Local components of (topology, sequence) cases for one problem: attention and pad_pack.
struct LocalTimes {
  Interval attention;              // all steps, no transfers
  std::vector<Interval> step;      // per Ring step (attention split; empty: equal steps)
  Interval merge;                  // Ring: the LSE merge after the last step (in `attention` too)
  Interval pad_pack;
  std::optional<Interval> length_exchange;  // measured with the table when present
  std::string source;
};

// The forward of `t` on problem `p` (U*R*A ranks). Communication bytes as SpAttention moves them.
Prediction predict(const Topology& t, const Problem& p, const LocalTimes& local, const CollModel& coll, double margin);

// Before any timing: every collective the forward of `t` on `p` needs is answerable by `coll` (a
// sweep of the group's size, or rescaling allowed); the UsageError predict() would raise after
// the calibration, raised now. Placeholder local times stand in.
void check_collectives(const Topology& t, const Problem& p, const CollModel& coll);

// The local table of a layerbench-attn result file: for each group "label/S=seq" its attention,
// pad_pack and length_exchange measurements.
std::map<std::string, LocalTimes> local_times_from(const reports::ResultFile& f);

// The ranked advice section.
using reports::advice_section;
// Its markdown (reports::to_markdown, level-3 heading), then how the communication was obtained and
// what the model cannot see.
std::string advice_markdown(const std::string& title, std::vector<Prediction> preds, double margin);

}  // namespace layerbench::attention
