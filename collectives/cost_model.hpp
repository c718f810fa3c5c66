#pragma once
// The collective cost model of the advisors: a collective's time from layerbench-coll sweeps.
// Pure host logic (no communicator), tested on the host with committed sweeps.
//   a sweep      out-of-place points of each op of a layerbench-coll result file: median and
//                p10-p90 spread, interpolated in bytes (log-log between neighbouring sizes;
//                constant time below the sweep, constant bandwidth above);
//   group sizes  the sweep at the group's size; a group size no sweep has is refused, unless the
//                user allows rescaling (--coll-rescale): then the nearest sweep through its bus
//                bandwidth (time x f(n)/f(g), f the nccl-tests bus factor), saying so;
//   a Ring step  (M bytes each way) as a 2-rank all_to_all of 2M bytes;
//   across nodes Topology: a group of n ranks placed on ceil(n/G) nodes of G ranks. One node: the
//                intra-node sweeps. Several: the --coll-inter sweeps (a sweep of ranks on several
//                nodes, rescaled the same way) or, absent them, an assumed link (per-GPU network
//                bandwidth and latency): t = latency + bytes x (share crossing the network) / bw,
//                marked as assumed (no interval of its own).
// Sizes follow nccl-tests: all_gather = output bytes, all_to_all = one rank's buffer,
// all_reduce = the buffer.
#include "reports/inputs.hpp"
#include "reports/prediction.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace layerbench {

// nccl-tests bus factor of an op on n ranks.
double bus_factor(const std::string& op, int n);

class CollModel {
 public:
  // A layerbench-coll result file: out-of-place points of each op; the group size from its config.
  // UsageError when it is not a sweep of a group of >= 2 ranks.
  void add(const reports::ResultFile& f);
  bool empty() const { return sweeps_.empty(); }
  bool has(const std::string& op) const;
  std::vector<int> group_sizes(const std::string& op) const;
  const std::vector<std::string>& files() const { return files_; }
  // Whether a group size without a sweep may be answered by the nearest sweep through its bus
  // bandwidth (the advisors' --coll-rescale); off: UsageError naming the sizes there are.
  bool rescale = false;
  // `how` says which sweep answered (and whether through bus bandwidth). UsageError when no sweep
  // of `op` was added, or none of n ranks and rescaling is off.
  reports::Interval time(const std::string& op, double bytes, int n, std::string* how = nullptr) const;
  // A Ring step moving `bytes` each way to a neighbour.
  reports::Interval p2p(double bytes, std::string* how = nullptr) const;

 private:
  struct Point {
    double bytes;
    reports::Interval t;
  };
  std::map<std::pair<std::string, int>, std::vector<Point>> sweeps_;
  std::vector<std::string> files_;
};

// An assumed network link per GPU (--inter-gbps, --inter-latency-us): no measurement behind it.
struct AssumedLink {
  double gbps = 0;          // GB/s per GPU, each direction
  double latency_us = 0;
  bool given() const { return gbps > 0; }
};

// Intra-node sweeps, optional inter-node sweeps or an assumed link, and G ranks per node.
struct ClusterCollModel {
  CollModel intra, inter;
  AssumedLink link;
  int gpus_per_node = 8;
  // A group of n ranks with `stride` between consecutive members (1: packed on nodes; a TP group
  // of t inside an EP group: the EP group's members are t apart). UsageError naming what is
  // missing when a group crosses nodes and neither inter-node sweeps nor a link were given.
  reports::Interval time(const std::string& op, double bytes, int n, int stride, std::string* how) const;
  int nodes_spanned(int n, int stride) const;
};

}  // namespace layerbench
