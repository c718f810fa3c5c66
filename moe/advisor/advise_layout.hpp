#pragma once
// The MoE layout advisor's model (layerbench-moe --advise): every layout of a model on N GPUs,
// the per-rank shapes and message sizes each implies, and its predicted layer time from
// calibrated local components plus the collective cost model (collectives/cost_model.hpp).
// Pure host logic: the calibration (timing one-rank layers) lives in the driver.
//
// Standard block, layout epE×tpT (E x T = N; T ranks of a TP group adjacent, an EP group's members
// T apart): --tokens T per GPU, so a TP group holds T x tokens (sequence-parallel in, gathered
// before the block, reduce-scattered after: equal global tokens for every layout); experts split
// contiguously over the EP group (experts % E == 0), each expert's intermediate over the TP group
// (intermediate and shared intermediate % T == 0). Per rank: router over the group's tokens,
// dispatch all-to-allv of its copies to the EP group, the local experts' rows (mean = tokens x k,
// busiest rank = mean x the load imbalance measured at that EP from real routing), combine,
// shared experts on the group's tokens at 1/T width, the TP gather and reduction.
// MAGI-2, layouts spP and tpP (the whole world): as moe/magi2/layer.hpp runs them, global tokens
// N x --tokens (SP: that many per rank; TP: replicated), heads sharded; each rank's experts see
// every token of their heads, so the ranks' expert loads are equal by construction.
#include "collectives/cost_model.hpp"
#include "moe/magi2/config.hpp"
#include "moe/config/model.hpp"
#include "reports/inputs.hpp"
#include "reports/prediction.hpp"

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace layerbench::moe {

struct AdviceLayout {
  std::string label;  // "ep8", "ep4xtp2", "sp2", "tp2"
  Block block = Block::standard;
  int ep = 1, tp = 1;       // standard block
  Layout magi = Layout::sp;  // MAGI-2
  int ranks = 1;
};

// Every valid layout of `m` on `gpus` ranks; `rejected` gets "label: reason" for the rest.
// UsageError when none is valid.
std::vector<AdviceLayout> advice_layouts(const Model& m, int gpus, std::vector<std::string>* rejected = nullptr);

// Work of one local component on one rank: flops (a GEMM) or bytes (a copy); `tokens` when the
// table declares neither (a norm).
struct LocalWork {
  double flops = 0, bytes = 0;
  double amount() const { return flops > 0 ? flops : bytes; }
};

// One rank's shape of the standard block.
struct StdShape {
  std::int64_t hidden = 0, experts = 0, topk = 0;   // router: experts scored per token
  std::int64_t experts_local = 0, inter = 0, shared_inter = 0;  // expert and shared widths on this rank
  std::int64_t tokens = 0;  // tokens on this rank (the TP group's)
  bool shared_gate = false;
  double act_bytes = 2;
};
StdShape std_shape(const Model& m, const AdviceLayout& l, std::int64_t tokens_per_gpu, double act_bytes);
// The local components of the standard block at a shape (mean expert rows = tokens x topk).
std::map<std::string, LocalWork> std_local_work(const StdShape& s);

// MAGI-2: the layer's geometry of a model, the plan of rank 0 (moe/magi2/config.hpp) and its local components.
Geometry magi2_geometry(const Model& m);
Plan magi2_plan(const Model& m, const AdviceLayout& l, std::int64_t tokens_per_gpu);
std::map<std::string, LocalWork> magi2_local_work(const Plan& p, double act_bytes);

// A calibrated local component: its time at the calibration shape and that shape's work.
struct Calibrated {
  reports::Interval t;
  LocalWork work;
  std::string source;  // "timed on DEVICE at SHAPE" (+ how it was shrunk)
};
using Calibration = std::map<std::string, Calibrated>;

// Expert load imbalance at one EP: the busiest rank's rows over the mean rank's (median and
// p10..p90 over resamplings) and how it was obtained.
struct Imbalance {
  reports::Interval factor{1, 1, 1};
  std::string source = "equal by construction";
};
// From the expert ids of real routing (`ids`: tokens x k, row-major): the loads of `ep` ranks
// (experts contiguous) over ep x tokens_per_rank tokens; windows of the routed tokens while they
// last, else bootstrap resamples of whole tokens (seeded; deterministic). draws >= 1.
Imbalance imbalance_from_routing(const std::vector<std::int32_t>& ids, std::int64_t topk, std::int64_t experts, int ep,
                                 std::int64_t tokens_per_rank, int draws, std::uint64_t seed);

// The calibration (measurements of group "calibration/<key>" with their declared work, params
// shape, shrink) and the imbalances (config "imbalance") of a layerbench-moe --advise result.
void read_calibration(const reports::ResultFile& f, std::map<std::string, Calibration>& cals,
                      std::map<std::string, Imbalance>& imbs);

struct AdviceInputs {
  const Model* model = nullptr;
  std::int64_t tokens_per_gpu = 0;
  double act_bytes = 2;
  double margin = 0.05;
  const ClusterCollModel* coll = nullptr;
  // Bytes of one token copy in the dispatch (FP8: moe/standard/fp8_dispatch.hpp's packed row);
  // 0: hidden x act_bytes, as the combine always is.
  double dispatch_row_bytes = 0;
};

// The predicted layer of layout `l`: every component (local ones scaled from `cal` by declared
// work; collectives at the layout's message sizes), the total widened by the margin, and a note
// naming the source of every figure.
reports::Prediction predict_layout(const AdviceLayout& l, const AdviceInputs& in, const Calibration& cal,
                                   const Imbalance& imb);

// Before any timing: every collective the layouts need is answerable by `in.coll` (a sweep of the
// group's size, rescaling allowed, or a network model across nodes): the UsageError the
// prediction would raise after the calibration, raised now; local parts are not looked up.
void check_collectives(const std::vector<AdviceLayout>& layouts, const AdviceInputs& in);

// The component of `best` that decides: the one with the largest share, and against the runner-up
// the one whose difference is largest. Plain sentences.
std::string deciding_component(const reports::Prediction& best, const reports::Prediction* runner_up);

}  // namespace layerbench::moe
