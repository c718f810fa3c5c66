#pragma once
// The topology advisor's model: a forward's predicted time from what one GPU and a collective
// sweep can measure. Pure host logic (tested on the host with committed results).
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
#include "reports/document.hpp"
#include "reports/inputs.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace layerbench::attention {

struct Interval {
  double median = 0, lo = 0, hi = 0;  // ms
  Interval& operator+=(const Interval& o) {
    median += o.median;
    lo += o.lo;
    hi += o.hi;
    return *this;
  }
};
Interval interval_of(const reports::Measurement& m);  // median, p10, p90 of the samples

class CollModel {
 public:
  // A layerbench-coll result file: out-of-place points of each op; the group size from its config.
  void add(const reports::ResultFile& f);
  bool empty() const { return sweeps_.empty(); }
  // nccl-tests sizes: all_gather = output bytes, all_to_all = one rank's buffer. `how` says
  // which sweep answered (and whether through bus bandwidth).
  Interval time(const std::string& op, double bytes, int n, std::string* how = nullptr) const;
  // A Ring step moving `bytes` each way to a neighbour.
  Interval p2p(double bytes, std::string* how = nullptr) const;

 private:
  struct Point {
    double bytes;
    Interval t;
  };
  std::map<std::pair<std::string, int>, std::vector<Point>> sweeps_;
  std::vector<std::string> files_;
};

// Local components of (topology, sequence) cases for one problem: attention and pad_pack.
struct LocalTimes {
  Interval attention;              // all steps, no transfers
  std::vector<Interval> step;      // per Ring step (attention split; empty: equal steps)
  Interval merge;                  // Ring: the LSE merge after the last step (in `attention` too)
  Interval pad_pack;
  std::optional<Interval> length_exchange;  // measured with the table when present
  std::string source;
};

struct Prediction {
  Topology topology;
  Interval total;                       // with the margin
  std::vector<std::pair<std::string, Interval>> parts;  // name -> time
  std::vector<std::string> notes;       // how each collective was obtained
};

// The forward of `t` on problem `p` (U*R*A ranks). Communication bytes as SpAttention moves them.
Prediction predict(const Topology& t, const Problem& p, const LocalTimes& local, const CollModel& coll, double margin);

// The local table of a layerbench-attn result file: for each group "label/S=seq" its attention,
// pad_pack and length_exchange measurements.
std::map<std::string, LocalTimes> local_times_from(const reports::ResultFile& f);

// The ranked table (fastest median first) and which differences are resolved (intervals apart), as
// a section headed by `title` and marked as a prediction.
reports::Section advice_section(const std::string& title, std::vector<Prediction> preds);
// Its markdown (reports::to_markdown, level-3 heading), then how the communication was obtained and
// what the model cannot see.
std::string advice_markdown(const std::string& title, std::vector<Prediction> preds, double margin);

}  // namespace layerbench::attention
