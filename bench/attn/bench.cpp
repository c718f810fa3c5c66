#include "bench/attn/bench.hpp"

#include "bench/attn/advise.hpp"
#include "bench/attn/report.hpp"
#include "bench/attn/whatif.hpp"
#include "common/cli/progress.hpp"
#include "harness/gbench.hpp"

#include "attention/kernels.hpp"
#include "attention/presets.hpp"
#include "attention/sp_attention.hpp"
#include "attention/topology.hpp"
#include "attention/verify.hpp"
#include "attention/workload.hpp"
#include "collectives/error.hpp"
#include "collectives/grid.hpp"
#include "common/cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace layerbench::attention {
namespace {

// The measurement contract of one case (this rank, per call). Every component is a part of
// the case's `total` (the whole forward, sp.forward()); the collectives are `communication`.
// Work:
//   attention: 4 B Hl (Lt+R) (Lt+S) D FLOPs, the FlashAttention forward convention: QK^T and PV,
//     each 2 FLOPs (multiply + add) per multiply-add, non-causal, softmax not counted; Hl are the
//     heads this rank executes (UAA padding included: the executed work).
//   total: the same FLOPs (the forward's arithmetic is the kernel's; copies and collectives do
//     none), so its rate is the forward's effective FLOP/s.
//   collectives: nccl-tests' size and bus factor. qkv_all_to_all: 3 tensors, the largest
//     per-rank send or receive (alltoallv convention); kv_all_gather: 2 gathered K/V tensors of
//     A x R rows; reverse_all_to_all: O's all-to-all plus the joint rows' all-gather; the
//     length exchange: one int64 per Ulysses rank.
//   pad_pack: local copies; no work declared.
struct Declared {
  reports::Role role = reports::Role::part;
  reports::Work work;
};

Declared declared(const std::string& name, const Topology& t, const Problem& p, const SpAttention& sp) {
  const double e = static_cast<double>(dtype_size(p.dtype));
  // Bytes of one row slice of Q/O and of K/V on this rank.
  const double row = e * static_cast<double>(p.batch) * sp.slice_heads() * p.head_dim;
  const double row_kv = e * static_cast<double>(p.batch) * sp.slice_kv_heads() * p.head_dim;
  const auto shards = shard_lengths(t, p.seq);
  const double widest = static_cast<double>(*std::max_element(shards.begin(), shards.end()));
  const double a2a_rows = std::max(t.ulysses * widest, static_cast<double>(sp.region()));
  const double block = static_cast<double>(sp.superblock());
  auto comm = [](double bytes, int n) {
    return Declared{reports::Role::communication, {0, bytes, static_cast<double>(n - 1) / n}};
  };
  // Executed work: every kernel call of the plan (masked keys and other requests' keys skipped).
  const double flops = sp.attention_flops();
  if (name == "attention") return {reports::Role::part, {flops, 0, 0}};
  if (name == "total") return {reports::Role::total, {flops, 0, 0}};
  if (name == "length_exchange") return comm(8.0 * t.ulysses, t.ulysses);
  if (name == "qkv_all_to_all") return comm((row + 2 * row_kv) * a2a_rows, t.ulysses);
  if (name == "kv_all_gather") return comm(2 * row_kv * block, t.allgather);
  if (name == "ring_p2p")  // bytes each rank sends over the R-1 steps; point to point (bus factor 1)
    return {reports::Role::communication, {0, 2 * row_kv * block * (t.ring - 1), 1.0}};
  if (name == "reverse_all_to_all")
    return comm(row * (a2a_rows + t.ulysses * static_cast<double>(p.text_tokens)), t.ulysses);
  return {};  // pad_pack
}

// A cause, beyond noise and overlap, for a part to exceed its total on this run: host ranks
// beyond the cores time-share them; a part timed alone runs on every rank at once, while inside
// the forward the collectives stagger the ranks' compute.
std::string oversubscription_note(Communicator& world) {
  const unsigned cores = std::thread::hardware_concurrency();
  if (world.backend() != Backend::host || cores == 0 || static_cast<unsigned>(world.size()) <= cores) return {};
  return fmt::format("reason on this run: {} host ranks share {} cores, so a part timed alone (every rank computing "
                     "at once) can contend for them more than the same part inside the forward, where the "
                     "collectives stagger the ranks",
                     world.size(), cores);
}

}  // namespace

// --benchmark_filter selects the (topology, length) cases measured: a case none of whose
// components it names is neither checked nor timed. A selected case is timed whole (its
// composition stays complete); Google Benchmark then reports the components that match.
bool case_selected(const BenchConfig& c, const std::string& group, const nlohmann::json& params,
                   const std::string& engine, int repetitions) {
  std::vector<reports::Measurement> ids;
  auto names = SpAttention::hook_points();
  names.push_back("total");
  for (const auto& name : names) {
    reports::Measurement id;
    id.name = name;
    id.group = group;
    id.params = params;
    if (name == "attention") id.params["engine"] = engine;
    ids.push_back(std::move(id));
  }
  return harness::gbench_selects_any(c.common.gbench, "layerbench-attn", ids, repetitions);
}

Problem problem_of(const BenchConfig& c, long long seq) {
  Problem p;
  p.batch = c.batch;
  p.seq = seq;
  p.heads = c.heads;
  p.head_dim = c.head_dim;
  p.text_tokens = c.text_tokens;
  p.dtype = parse_dtype(c.dtype);
  p.kv_heads = c.kv_heads;
  p.joint = parse_joint_position(c.joint);
  p.joint_valid = c.joint_lengths;
  p.image_valid = c.image_lengths;
  p.cu_seqlens = c.requests > 1 ? packed_requests(seq, c.requests) : c.cu_seqlens;
  p.cached_kv = c.cached_kv;
  p.causal = c.causal;
  return p;
}

// The topologies of the run: the list as given (each must serve the workload, else exit 2), or
// with `all` every (U, R, A) of the world that serves it, the others named with their reason.
void check_case(const BenchConfig& c, const Topology& t, int world) {
  if (c.ulysses_only && (t.ring > 1 || t.allgather > 1))
    throw UsageError(fmt::format("topology {}: {} serves Ulysses only (its attention rejects Ring and AllGather-KV)",
                                 t.label, c.model));
  for (long long s : c.seqs) check_workload(t, problem_of(c, s), world);
}

std::vector<Topology> run_topologies(const BenchConfig& c, int world, std::string& skipped) {
  if (c.topologies != "all") {
    const auto list = parse_topologies(c.topologies);
    // Every rank sees the same arguments, so these throw on every rank alike: exit 2 everywhere.
    for (const auto& t : list) check_case(c, t, world);
    return list;
  }
  std::vector<Topology> out;
  for (const auto& t : all_topologies(world, c.heads)) {
    try {
      check_case(c, t, world);
      out.push_back(t);
    } catch (const UsageError& e) {
      skipped += fmt::format("- {}: {}\n", t.label, e.what());
    }
  }
  if (out.empty()) throw UsageError(fmt::format("no topology of {} ranks serves this workload:\n{}", world, skipped));
  return out;
}

namespace {

// One run's state across its cases: the results, the cases' JSON, the what-if markdown.
struct RunState {
  RunState(harness::Context& x, const BenchConfig& cfg, Kernels& k, const harness::Runner& r)
      : ctx(x), c(cfg), kernels(k), runner(r), targets(what_if_targets(cfg)) {}
  harness::Context& ctx;
  const BenchConfig& c;
  Kernels& kernels;
  const harness::Runner& runner;
  std::vector<harness::WhatIfTarget> targets;
  std::vector<reports::Measurement> results;
  nlohmann::json cases = nlohmann::json::array();
  std::string what_if_md;
  bool all_pass = true;
  std::size_t selected_cases = 0;
};

// The parameters every measurement of a case carries.
nlohmann::json case_params(const BenchConfig& c, const Topology& t, const Problem& prob, const SpAttention& sp) {
  const AttentionShape as = sp.attention_shape();
  return {{"topology", t.label}, {"ulysses", t.ulysses}, {"ring", t.ring},
          {"allgather", t.allgather}, {"uaa", t.uaa},
          {"kv_heads", prob.kv()}, {"local_kv_heads", sp.slice_kv_heads()},
          {"workload", prob.describe()}, {"joint_position", to_string(prob.joint)},
          {"kernel_calls", sp.plan().calls.size()}, {"lse_merge", !sp.plan().direct},
          {"seq", prob.seq}, {"batch", c.batch},
          {"heads", c.heads}, {"padded_heads", sp.padded_heads()},
          {"head_dim", c.head_dim}, {"text_tokens", c.text_tokens},
          {"dtype", c.dtype}, {"seq_q", as.seq_q}, {"seq_kv", as.seq_kv},
          {"local_heads", as.heads}};
}

// One (topology, length) case: checked against the oracle, then timed component by component
// and whole (and its what-ifs). Returns the case's SpAttention when it was timed (kept alive for
// the round-robin of the length's forwards), null when it was filtered out or failed its check.
// One forward checked against the oracle (max over ranks); the case's summary with the verdict.
nlohmann::json verify_case(RunState& st, SpAttention& sp, const Problem& prob, std::uint64_t seed,
                           const std::string& group, const nlohmann::json& params, const Topology& t, long long seq) {
  Communicator& world = st.ctx.world;
  Device& dev = world.device();
  const DType dtype = parse_dtype(st.c.dtype);
  const Stream s = dev.compute_stream();
  sp.forward(s);
  dev.synchronize(s);
  const CheckResult chk = check_outputs(sp, dev, prob, seed, st.c.verify_budget);
  double errs[2] = {chk.max_abs_err, chk.max_abs_ref};
  world.control_max(errs);
  const double err = errs[0], ref_max = errs[1];
  const double tol = tolerance(dtype) * ref_max;  // relative to the largest |reference|
  const bool pass = ref_max > 0 && err <= tol;
  st.all_pass = st.all_pass && pass;
  if (st.ctx.is_root())
    std::fprintf(stderr, "[attn] %s: max_abs_err %.3g (max |ref| %.3g, tol %.3g = %.0e x max |ref|, %s rows) %s\n",
                 group.c_str(), err, ref_max, tol, tolerance(dtype), chk.all_rows ? "all" : "sampled",
                 pass ? "ok" : "FAIL");
  return {{"topology", t.label}, {"seq", seq}, {"params", params},
          {"max_abs_err", err}, {"max_abs_ref", ref_max}, {"tolerance", tol},
          {"rel_tolerance", tolerance(dtype)},
          {"pass", pass}, {"verified_all_rows", chk.all_rows}};
}

std::unique_ptr<SpAttention> time_case(RunState& st, const Topology& t, const Grid3Comms& grid, long long seq) {
  const BenchConfig& c = st.c;
  Communicator& world = st.ctx.world;
  Device& dev = world.device();
  const Problem prob = problem_of(c, seq);
  auto owned = std::make_unique<SpAttention>(SpGroups{*grid.inner, *grid.middle, *grid.outer}, t, prob, st.kernels,
                                             world.rank());
  SpAttention& sp = *owned;
  const std::string group = fmt::format("{}/S={}", t.label, seq);
  const nlohmann::json params = case_params(c, t, prob, sp);
  if (!case_selected(c, group, params, st.kernels.describe(), st.runner.options().iterations)) return nullptr;
  ++st.selected_cases;
  const std::uint64_t seed = c.common.seed ^ (static_cast<std::uint64_t>(seq) << 20);
  fill_inputs(sp, dev, prob, seed);
  sp.prepare();  // kernel plans are built outside the timed region

  // ---- correctness first ----------------------------------------------------------
  nlohmann::json summary = verify_case(st, sp, prob, seed, group, params, t, seq);
  const double err = summary["max_abs_err"];
  if (!summary["pass"].get<bool>()) {
    st.cases.push_back(summary);
    return nullptr;  // never time a wrong answer
  }

  // ---- timing, component by component, then the whole forward --------------------
  auto time = [&](const char* name, const std::function<void(Stream)>& body,
                  harness::Clock clock = harness::Clock::device) -> reports::Measurement& {
    reports::Measurement m = st.runner.time(name, body, clock);
    m.group = group;
    m.params = params;
    const auto d = declared(name, t, prob, sp);
    m.role = d.role;
    m.work = d.work;
    if (m.role != reports::Role::total) m.parent = "total";
    st.results.push_back(std::move(m));
    return st.results.back();
  };
  if (sp.has_length_exchange()) time("length_exchange", [&](Stream) { sp.length_exchange(); }, harness::Clock::host);
  time("pad_pack", [&](Stream q) { sp.pack_inputs(q); sp.unpack_outputs(q); });
  if (t.ulysses > 1) time("qkv_all_to_all", [&](Stream q) { sp.qkv_all_to_all(q); });
  if (t.allgather > 1) time("kv_all_gather", [&](Stream q) { sp.kv_all_gather(q); });
  if (t.ring > 1) time("ring_p2p", [&](Stream q) { sp.ring_p2p(q); });
  {
    auto& m = time("attention", [&](Stream q) { sp.attention(q); });
    m.params["engine"] = st.kernels.describe();
    m.metrics["padded_work_fraction"] = static_cast<double>(sp.padded_heads() - c.heads) / c.heads;
    summary["engine"] = st.kernels.describe();
  }
  if (t.ulysses > 1) time("reverse_all_to_all", [&](Stream q) { sp.reverse_all_to_all(q); });
  auto& total = time("total", [&](Stream q) { sp.forward(q); });
  total.metrics["max_abs_err"] = err;
  if (!st.targets.empty()) {
    std::vector<const reports::Measurement*> measured;
    for (const auto& m : st.results)
      if (m.group == group) measured.push_back(&m);
    const auto w = run_attention_what_ifs(sp, world, st.targets, what_if_options(c), c.layers, measured);
    nlohmann::json wj = nlohmann::json::array();
    for (const auto& r : w) wj.push_back(r.to_json(0.95));
    summary["what_if"] = wj;
    if (!w.empty()) st.what_if_md += harness::what_if_markdown(w, 0.95, group, /*notes=*/false);
  }
  st.cases.push_back(summary);
  return owned;
}

// Per length: the topologies compared (round-robin forwards), then each case's composition; the
// cases' JSON gets their ratio to the first and their round-robin samples.
std::string comparisons_markdown(RunState& st, const std::map<long long, std::vector<CaseRef>>& timed,
                                 const std::map<long long, std::vector<RoundRobin>>& round_robin,
                                 const std::string& note, double confidence) {
  std::string md;
  for (const auto& [seq, list] : timed) {
    static const std::vector<RoundRobin> none;  // a length with one case has nothing to compare
    const auto found = round_robin.find(seq);
    const auto& runs = found == round_robin.end() ? none : found->second;
    const auto cmp = compare_totals(st.results, list, runs, confidence);
    md += fmt::format("\n### S = {}\n\n{}", seq, cmp.markdown);
    if (!runs.empty())
      md += fmt::format("\nThe forwards of these {} topologies were timed round-robin, each once per iteration in a "
                        "rotating order, {} iterations{}: a ratio is the median of the per-iteration ratios (same "
                        "minutes, same clocks), its interval a bootstrap over iterations.\n",
                        list.size(), st.runner.options().iterations,
                        runs.size() > 1 ? fmt::format(", {} runs (--repeat; the spread is max - min of the runs' "
                                                      "ratios)", runs.size())
                                        : std::string());
    for (std::size_t i = 0; i < list.size(); ++i) {
      md += case_markdown(st.results, list[i], note);
      for (auto& cj : st.cases) {
        if (cj["topology"] != list[i].topology || cj["seq"] != seq) continue;
        cj["total_vs_first"] = cmp.vs_first[i];
        nlohmann::json samples = nlohmann::json::array();
        for (const auto& run : runs) samples.push_back(run[i]);
        cj["interleaved_forward_ms"] = samples;
      }
    }
  }
  return md;
}

}  // namespace

int run(harness::Context& ctx, const BenchConfig& c) {
  if (c.list_models) {
    if (ctx.is_root()) std::fputs(list_models().c_str(), stdout);
    return 0;
  }
  if (ctx.is_root() && !c.seq_formula.empty()) std::fprintf(stderr, "[attn] %s\n", c.seq_formula.c_str());
  if (c.advise) return run_advise(ctx, c);
  Communicator& world = ctx.world;
  std::string skipped;
  const auto topologies = run_topologies(c, world.size(), skipped);
  const DType dtype = parse_dtype(c.dtype);
  const bool gpu = world.backend() == Backend::cuda;
  if (gpu && dtype != DType::bf16) throw UsageError("--dtype fp32 runs on the host backend only");

  auto kernels = gpu ? make_cuda_kernels(dtype, c.sdpa) : make_host_kernels(dtype);
  harness::Runner runner(world, harness::timing_from(c.common));
  RunState st(ctx, c, *kernels, runner);
  std::map<long long, std::vector<CaseRef>> timed;  // per sequence: the cases timed, in run order
  std::map<long long, std::vector<RoundRobin>> round_robin;  // per sequence: their forwards, one per --repeat run
  std::vector<Grid3Comms> grids;
  for (const auto& t : topologies) grids.push_back(make_grid3(world, t.ulysses, t.allgather, t.ring));

  std::optional<cli::Progress> progress;
  if (ctx.is_root()) progress.emplace("topologies", topologies.size() * c.seqs.size());
  for (long long seq : c.seqs) {
    // Every case of this length stays alive until its forwards have been timed round-robin.
    std::vector<std::unique_ptr<SpAttention>> alive;
    for (std::size_t ti = 0; ti < topologies.size(); ++ti) {
      const Topology& t = topologies[ti];
      auto sp = time_case(st, t, grids[ti], seq);
      if (progress) progress->step(fmt::format("{} S={}", t.label, seq));
      if (!sp) continue;
      alive.push_back(std::move(sp));
      timed[seq].push_back({fmt::format("{}/S={}", t.label, seq), t.label, seq});
    }
    // Ratios between topologies come from forwards timed in the same iterations (round-robin).
    if (alive.empty()) continue;  // the filter left no case of this length (no empty entry in `timed`)
    std::vector<std::function<void(Stream)>> forwards;
    for (auto& sp : alive) forwards.push_back([p = sp.get()](Stream q) { p->forward(q); });
    std::vector<std::string> names;
    for (const auto& tc : timed.at(seq)) names.push_back(tc.group + " forward (round-robin)");
    if (forwards.size() > 1)
      for (int r = 0; r < c.repeat; ++r)
        round_robin[seq].push_back(runner.time_round_robin(forwards, harness::Clock::device, names));
  }

  if (st.selected_cases == 0)
    throw UsageError(fmt::format("--benchmark_filter={}: selects no component of the {} (topology, length) cases",
                                 c.common.gbench.filter, topologies.size() * c.seqs.size()));

  // Everything printed comes from the measurements' roles and declared work.
  const double confidence = 0.95;
  std::string md = fmt::format(
      "## layerbench-attn: {} ranks, {} backend, H={} D={} B={} Lt={} {}\n\nworkload: {}{}\n\nattention: {}\n",
      world.size(), to_string(world.backend()), c.heads, c.head_dim, c.batch, c.text_tokens,
      c.dtype, problem_of(c, c.seqs.front()).describe(),
      c.seq_formula.empty() ? std::string() : "\n\nsequence: " + c.seq_formula, kernels->describe());
  md += comparisons_markdown(st, timed, round_robin, oversubscription_note(world), confidence);
  if (!skipped.empty()) md += fmt::format("\nTopologies of {} ranks that do not serve this workload:\n{}", world.size(), skipped);
  if (!st.what_if_md.empty()) st.what_if_md += harness::what_if_notes();
  md += st.what_if_md;
  if (ctx.is_root()) std::fputs(md.c_str(), harness::text_stream(c.common));

  const nlohmann::json config = {{"heads", c.heads}, {"head_dim", c.head_dim}, {"seqs", c.seqs},
                                 {"batch", c.batch}, {"text_tokens", c.text_tokens},
                                 {"dtype", c.dtype}, {"topologies", c.topologies},
                                 {"joint_position", c.joint}, {"kv_heads", c.kv_heads},
                                 {"joint_lengths", c.joint_lengths}, {"image_lengths", c.image_lengths},
                                 {"requests", c.requests}, {"cu_seqlens", c.cu_seqlens},
                                 {"cached_kv", c.cached_kv}, {"model", c.model}, {"resolution", c.resolution},
                                 {"frames", c.frames}, {"sequence_formula", c.seq_formula}, {"sdpa", c.sdpa},
                                 {"repeat", c.repeat}};
  const auto doc = harness::make_document(ctx, runner, config, st.results,
                                          {{"attention_engine", kernels->describe()}, {"topologies", st.cases}});
  harness::write_outputs(ctx, c.common, doc, st.results, md);
  return st.all_pass ? 0 : 1;
}

}  // namespace layerbench::attention
