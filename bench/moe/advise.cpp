// layerbench-moe --advise: calibration on this device and the advice (bench/moe/advise.hpp).
#include "bench/moe/advise.hpp"

#include "bench/moe/profile.hpp"
#include "collectives/error.hpp"
#include "common/cli.hpp"
#include "common/cli/progress.hpp"
#include "harness/main.hpp"
#include "moe/advisor/advise_layout.hpp"
#include "moe/standard/fp8_dispatch.hpp"
#include "moe/init.hpp"
#include "moe/standard/std_block.hpp"
#include "moe/standard/std_ops.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>

namespace layerbench::moe {

void add_advise_flags(CLI::App& app, RunConfig& c) {
  app.add_flag("--advise", c.advise,
               "rank every layout of the model on --gpus N by predicted layer time (one rank: calibrates on this "
               "device; collectives from --coll sweeps)");
  cli::add_int(app, "--gpus", c.gpus, "--advise: GPUs the advice is for", 0, 1 << 20);
  cli::add_int(app, "--gpus-per-node", c.gpus_per_node, "--advise: GPUs per node (groups beyond it cross the network)",
               1, 1 << 10);
  app.add_option("--coll", c.coll_files, "--advise: layerbench-coll JSON sweeps of one node (repeatable)");
  auto* inter = app.add_option("--coll-inter", c.coll_inter_files, "--advise: layerbench-coll JSON sweeps over several nodes");
  app.add_flag("--coll-rescale", c.coll_rescale,
               "--advise: a group size no sweep has is costed from the nearest sweep through its bus bandwidth (said "
               "in the advice); without it such a group is refused");
  // Measured inter-node sweeps and an assumed link answer the same question: one or the other.
  inter->excludes(cli::add_real(app, "--inter-gbps", c.inter_gbps,
                                "--advise: ASSUMED network bandwidth per GPU in GB/s for groups across nodes without "
                                "--coll-inter",
                                num::RealRange::non_negative(1e6)));
  inter->excludes(cli::add_real(app, "--inter-latency-us", c.inter_latency_us,
                                "--advise: ASSUMED network latency per collective (us), with --inter-gbps",
                                num::RealRange::non_negative(1e6)));
  cli::add_real(app, "--margin", c.margin, "--advise: interval widening, a fraction of the median",
                num::RealRange::closed(0, 1));
  cli::add_real(app, "--advise-budget-s", c.advise_budget_s,
                "--advise: seconds one calibration run may take (larger shapes are shrunk and scaled by declared work); "
                "0 = 3 on host, 20 on cuda",
                num::RealRange::non_negative(86400));
  app.add_option("--calibration", c.calibration, "--advise: reuse the calibration of a previous --advise --json FILE");
}

namespace {

using reports::Interval;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
float uniform_scale(std::int64_t fan_in) { return std::sqrt(3.0f / static_cast<float>(fan_in)); }

// FLOP/s of this backend's dense GEMM at a small size: the estimate of every calibration's time.
double gemm_rate(StdOps& ops, Device& dev, bool gpu) {
  const std::int64_t g = gpu ? 8192 : 128;  // the profile's dense reference sizes
  const auto bytes = static_cast<std::size_t>(g * g) * (gpu ? 2 : 4);
  Buffer A = dev.alloc(bytes), B = dev.alloc(bytes), C = dev.alloc(bytes);
  DenseOps& o = ops.dense();
  const Stream s = dev.compute_stream();
  auto run = [&] { o.linear(A.data(), B.data(), C.data(), {.m = g, .n = g, .k = g, .lda = g, .ldw = g, .ldc = g}, false, s); };
  run();
  dev.synchronize(s);
  const double t0 = now_s();
  for (int i = 0; i < 3; ++i) run();
  dev.synchronize(s);
  return 3 * 2.0 * double(g) * double(g) * double(g) / std::max(now_s() - t0, 1e-9);
}

double flops_of(const std::map<std::string, LocalWork>& w) {
  double f = 0;
  for (const auto& [n, x] : w) f += x.flops + x.bytes / 4;  // a byte moved ~ a quarter FLOP (rough)
  return f;
}

// One calibration run: the one-rank layer to build and time, its work and how it was shrunk.
struct CalRun {
  std::string key;    // "calibration/<layout>" (standard) | "calibration/magi2"
  std::string shape;  // the timed shape
  std::string shrink; // "" = the layout's own shape
  std::map<std::string, LocalWork> work;
  double estimate_s = 0;
  Model model;        // standard: the one-rank model
  std::int64_t tokens = 0;
  Geometry geo;       // MAGI-2
};

std::string std_shape_text(const StdShape& s) {
  return fmt::format("{} local experts of hidden {} x intermediate {}, top-{}, {} tokens ({} rows, {:.0f} per expert), "
                     "shared intermediate {}",
                     s.experts_local, s.hidden, s.inter, s.topk, s.tokens, s.tokens * s.topk,
                     double(s.tokens * s.topk) / double(s.experts_local), s.shared_inter);
}

// The standard block's calibration for layout l: the rank's local experts (rows per expert and
// width as the layout has them) in a one-rank block, shrunk until it fits the budget.
CalRun std_cal(const Model& m, const AdviceLayout& l, std::int64_t tokens, double act_b, double rate, double budget,
               double timed_calls, bool gpu) {
  const StdShape want = std_shape(m, l, tokens, act_b);
  StdShape s = want;
  s.experts = s.experts_local;
  s.topk = std::min(want.topk, want.experts_local);
  s.tokens = (want.tokens * want.topk + s.topk - 1) / s.topk;
  const double mem_cap = gpu ? 60e9 : 2e9;
  auto mem = [&](const StdShape& x) {
    const double H = double(x.hidden), rows = double(x.tokens * x.topk);
    return (double(x.experts_local) * 3 * H * double(x.inter) + 3 * H * double(x.shared_inter)) * act_b +
           rows * (6 * H + 3 * double(x.inter)) * act_b + double(x.tokens) * (4 * H + double(x.experts)) * 4;
  };
  auto est = [&](const StdShape& x) { return timed_calls * flops_of(std_local_work(x)) / rate; };
  std::vector<std::string> steps;
  while (est(s) > budget || mem(s) > mem_cap) {
    if (s.experts_local >= 2 * s.topk && s.experts_local % 2 == 0) {  // fewer experts, same rows per expert
      s.experts_local /= 2;
      s.experts = s.experts_local;
      s.tokens = (s.tokens + 1) / 2;
      steps.push_back("experts/2");
    } else if (s.hidden >= 128 && s.inter >= 16 && s.hidden % 16 == 0 && s.inter % 16 == 0) {
      s.hidden /= 2;
      s.inter /= 2;
      s.shared_inter /= 2;
      steps.push_back("hidden and intermediate/2");
    } else if (s.tokens > 64) {
      s.tokens = (s.tokens + 1) / 2;
      steps.push_back("tokens/2 (fewer rows per expert)");
    } else {
      break;
    }
  }
  CalRun r;
  r.key = "calibration/" + l.label;
  r.shape = std_shape_text(s);
  if (!steps.empty()) {
    std::map<std::string, int> count;
    for (const auto& x : steps) ++count[x];
    std::string how;
    for (const auto& [x, n] : count) how += fmt::format("{}{} x{}", how.empty() ? "" : ", ", x, n);
    r.shrink = fmt::format("shrunk from {} ({}) to fit the budget", std_shape_text(want), how);
  }
  r.work = std_local_work(s);
  r.estimate_s = est(s);
  r.model = m;
  r.model.hidden = s.hidden;
  r.model.experts = s.experts_local;
  r.model.topk = s.topk;
  r.model.moe_intermediate = s.inter;
  r.model.shared.count = s.shared_inter > 0 ? 1 : 0;
  r.model.shared.size = s.shared_inter;
  r.model.router.groups = 1;
  r.model.router.topk_groups = 1;
  r.tokens = s.tokens;
  return r;
}

CalRun magi2_cal(const Model& m, std::int64_t tokens, double act_b, double rate, double budget, double timed_calls) {
  Geometry g = magi2_geometry(m);
  std::int64_t n = tokens;
  auto work = [&] { return magi2_local_work(make_plan(g, Layout::sp, 0, 1, {n}), act_b); };
  auto text = [&] {
    return fmt::format("hidden {}, {} heads x {} experts, top-{}, intermediate {}, {} tokens on one rank", g.hidden, g.heads,
                       g.experts, g.topk, g.intermediate, n);
  };
  const std::string want = text();
  std::vector<std::string> steps;
  while (timed_calls * flops_of(work()) / rate > budget) {
    if (g.experts >= 2 * g.topk && g.experts % 2 == 0 && g.experts > 16) {
      g.experts /= 2;
      steps.push_back("experts/2");
    } else if (g.hidden / g.heads >= 16 && (g.hidden / g.heads) % 16 == 0 && g.intermediate % 16 == 0) {
      g.hidden /= 2;
      g.intermediate /= 2;
      steps.push_back("hidden and intermediate/2");
    } else if (n > 64) {
      n = (n + 1) / 2;
      steps.push_back("tokens/2");
    } else {
      break;
    }
  }
  CalRun r;
  r.key = "calibration/magi2";
  r.shape = text();
  if (!steps.empty()) r.shrink = fmt::format("shrunk from {} ({} halvings) to fit the budget", want, steps.size());
  r.work = work();
  r.estimate_s = timed_calls * flops_of(r.work) / rate;
  r.geo = g;
  r.tokens = n;
  return r;
}

// Times the one-rank layer of `run` component by component; the measurements (group = run.key,
// their declared work, params: shape) go to `results`.
Calibration time_cal(harness::Context& ctx, const RunConfig& c, const CalRun& run, const harness::Runner& runner,
                     std::vector<reports::Measurement>& results) {
  Communicator& world = ctx.world;
  auto& dev = world.device();
  const Stream s = dev.compute_stream();
  const bool gpu = world.backend() == Backend::cuda;
  const std::string where = fmt::format("timed on {} ({})", dev.name(), run.shape);
  Calibration cal;
  auto record = [&](reports::Measurement m, const std::string& name) {
    const LocalWork w = run.work.count(name) ? run.work.at(name) : LocalWork{};
    m.group = run.key;
    m.role = reports::Role::probe;
    m.work = {.flops = w.flops, .bytes = w.bytes};
    m.params = {{"shape", run.shape}, {"shrink", run.shrink}};
    cal[name] = {reports::interval_of(m), w, where + (run.shrink.empty() ? "" : "; " + run.shrink)};
    results.push_back(std::move(m));
  };
  if (c.model.block == Block::standard) {
    StdPlan plan = make_std_plan(run.model, 0, 1, {run.tokens});
    // At the model's precision (make_std_plan) and the dispatch's: calibrated as they run.
    plan.dispatch = c.dispatch == "fp8" ? DispatchPrecision::fp8 : DispatchPrecision::act;
    auto ops = gpu ? make_cuda_std_ops(dev) : make_host_std_ops();
    if (!c.expert_table.empty()) load_expert_table(*ops, c.expert_table);
    StdBlock block(run.model, plan, world, std::move(ops), c.common.seed);
    Buffer x = block.make_activation(), out = block.make_activation();
    block.fill_input(x.data(), c.common.seed, s);
    block.forward(x.data(), out.data(), s);
    dev.synchronize(s);
    for (const auto& comp : block.components()) {
      if (comp.role == reports::Role::total) continue;  // dispatch and combine: copies to itself (EP 1 only)
      record(runner.time(comp.name, [&, name = comp.name](Stream st) { block.run_component(name, st); },
                         comp.host_clock ? harness::Clock::host : harness::Clock::device),
             comp.name);
    }
  } else {
    RunConfig cc = c;
    cc.geo = run.geo;
    cc.tokens = run.tokens;
    cc.layout = "sp";
    cc.split_sizes.clear();
    auto layer = make_layer(cc, world, c.common.seed);
    Buffer x = layer->make_activation(), out = layer->make_activation();
    layer->fill_input(x.data(), c.common.seed, s);
    const auto splits = std::span<const std::int64_t>(layer->plan().splits);
    layer->forward(x.data(), out.data(), splits, s);
    dev.synchronize(s);
    for (const char* name : {"pre_norm", "split_linear", "routing", "local_expert_compute", "merge_linear", "shared_branch"})
      record(runner.time(name, [&](Stream st) { layer->run_component(name, st); }), name);
  }
  return cal;
}

// Real routing of `tokens` random tokens through the model's router on this backend: expert ids.
// With `router`, also times the router itself at the model's shape (one chunk) into it and `results`.
std::vector<std::int32_t> route_sample(harness::Context& ctx, const Model& m, std::int64_t tokens, std::uint64_t seed,
                                       const harness::Runner* runner = nullptr, Calibrated* router = nullptr,
                                       std::vector<reports::Measurement>* results = nullptr,
                                       std::int64_t router_tokens = 0) {
  auto& dev = ctx.world.device();
  const Stream s = dev.compute_stream();
  auto ops = ctx.world.backend() == Backend::cuda ? make_cuda_std_ops(dev) : make_host_std_ops();
  DenseOps& o = ops->dense();
  const DType act = o.act();
  const std::size_t a = dtype_size(act);
  const std::int64_t H = m.hidden, E = m.experts, k = m.topk, chunk = std::min<std::int64_t>(tokens, 4096);
  Buffer w = dev.alloc(static_cast<std::size_t>(E * H) * a), bias = dev.alloc(static_cast<std::size_t>(E) * 4);
  o.fill(w.data(), act, {.seed = seed, .tensor = kRouterGate, .scale = uniform_scale(H), .rows = E, .cols = H, .full_cols = H, .ld = H}, s);
  o.fill(bias.data(), DType::fp32, {.seed = seed, .tensor = kExpertBias, .scale = 0.05f, .rows = 1, .cols = E, .full_cols = E, .ld = E}, s);
  Buffer x = dev.alloc(static_cast<std::size_t>(chunk * H) * a), logits = dev.alloc(static_cast<std::size_t>(chunk * E) * 4);
  Buffer idx = dev.alloc(static_cast<std::size_t>(chunk * k) * 4), wt = dev.alloc(static_cast<std::size_t>(chunk * k) * 4);
  std::vector<std::int32_t> ids;
  if (router) {  // the router at the model's shape (logits and top-k) on `rt` tokens: the budget's share
    const std::int64_t rt = router_tokens > 0 ? std::min(router_tokens, chunk) : chunk;
    o.fill(x.data(), act, {.seed = seed, .tensor = kInput, .scale = std::sqrt(3.0f), .rows = rt, .cols = H, .full_cols = H, .ld = H}, s);
    reports::Measurement meas = runner->time("router_full", [&](Stream st) {
      ops->logits(x.data(), w.data(), logits.as<float>(), rt, H, E, st);
      ops->route(logits.as<float>(), bias.as<float>(), m.router, rt, E, k, idx.as<std::int32_t>(), wt.as<float>(), st);
    });
    const double flops = 2.0 * double(rt) * double(E) * double(H);
    meas.group = "calibration/router";
    meas.role = reports::Role::probe;
    const std::string shape = fmt::format("the model's router: {} experts x hidden {}, {} tokens", E, H, rt);
    meas.work = {.flops = flops};
    meas.params = {{"shape", shape}, {"shrink", ""}};
    *router = {reports::interval_of(meas), {.flops = flops}, fmt::format("timed on {} ({})", dev.name(), shape)};
    results->push_back(std::move(meas));
  }
  for (std::int64_t t0 = 0; t0 < tokens; t0 += chunk) {
    const std::int64_t n = std::min(chunk, tokens - t0);
    o.fill(x.data(), act, {.seed = seed, .tensor = kInput, .scale = std::sqrt(3.0f), .rows = n, .cols = H, .full_cols = H, .row0 = t0, .ld = H}, s);
    ops->logits(x.data(), w.data(), logits.as<float>(), n, H, E, s);
    ops->route(logits.as<float>(), bias.as<float>(), m.router, n, E, k, idx.as<std::int32_t>(), wt.as<float>(), s);
    const auto got = dev.download<std::int32_t>(idx.data(), static_cast<std::size_t>(n * k));
    ids.insert(ids.end(), got.begin(), got.end());
  }
  return ids;
}

// The precision a calibration was made at: the routed and shared experts' recipes and the dispatch's.
std::string precision_key(const RunConfig& c) {
  const auto e = expert_precision(c.model.precision.experts), s = expert_precision(c.model.precision.shared);
  auto name = [](ExpertPrecision p) { return p == ExpertPrecision::act ? std::string("bf16") : std::string(to_string(p)); };
  std::string key = name(e) + " experts";
  if (c.model.shared.count > 0 && s != e) key += ", " + name(s) + " shared experts";
  return key + ", " + (c.dispatch == "fp8" ? "fp8" : "act") + " dispatch";
}

// A previous --advise JSON: its calibration (by group) and imbalances, checked against this run.
// Returns the activation bytes the calibration was made with (its message sizes follow them).
double load_calibration(const RunConfig& c, std::map<std::string, Calibration>& cals, std::map<std::string, Imbalance>& imbs) {
  const auto f = reports::load_result_file(c.calibration);
  if (!f.config.value("advise", false))
    throw UsageError(fmt::format("--calibration {}: not a layerbench-moe --advise result", c.calibration));
  if (f.config.value("model_name", std::string()) != c.model.name || f.config.value("tokens", std::int64_t{0}) != c.tokens)
    throw UsageError(fmt::format("--calibration {}: calibrated for {} at {} tokens per GPU, not {} at {}", c.calibration,
                                 f.config.value("model_name", std::string("?")), f.config.value("tokens", std::int64_t{0}),
                                 c.model.name, c.tokens));
  // The experts' precision and the dispatch's are part of what was calibrated.
  const std::string want = precision_key(c), got = f.config.value("precision_key", std::string("bf16 experts, act dispatch"));
  if (got != want)
    throw UsageError(fmt::format("--calibration {}: calibrated with {}, not {}", c.calibration, got, want));
  read_calibration(f, cals, imbs);
  return f.config.value("act_bytes", 2.0);
}

}  // namespace

int run_advise(harness::Context& ctx, const RunConfig& c) {
  Communicator& world = ctx.world;
  if (world.size() != 1) throw UsageError("--advise runs on one rank (it calibrates one rank's work on this device)");
  if (c.gpus < 1) throw UsageError("--advise needs --gpus N (the machine the advice is for)");
  const Model& m = c.model;
  std::vector<std::string> rejected;
  const auto layouts = advice_layouts(m, c.gpus, &rejected);
  ClusterCollModel coll;
  coll.gpus_per_node = c.gpus_per_node;
  coll.link = {c.inter_gbps, c.inter_latency_us};
  coll.intra.rescale = coll.inter.rescale = c.coll_rescale;
  for (const auto& f : c.coll_files) coll.intra.add(reports::load_result_file(f));
  for (const auto& f : c.coll_inter_files) coll.inter.add(reports::load_result_file(f));
  if (c.gpus > 1 && coll.intra.empty())
    throw UsageError("--advise for more than one GPU needs --coll FILE (a layerbench-coll JSON sweep)");
  if (c.gpus > 1 && !coll.intra.has("all_to_all"))
    throw UsageError(fmt::format("--coll {}: no all_to_all rows (the dispatch and combine are costed from them); sweep "
                                 "with layerbench-coll --ops all_to_all,...", fmt::join(c.coll_files, ", ")));
  const bool gpu = world.backend() == Backend::cuda;
  std::map<std::string, Calibration> cals;
  std::map<std::string, Imbalance> imbs;
  const double act_b = c.calibration.empty() ? (gpu ? 2 : 4) : load_calibration(c, cals, imbs);
  AdviceInputs in{&m, c.tokens, act_b, c.margin, &coll};
  if (c.dispatch == "fp8") in.dispatch_row_bytes = double(fp8::dispatch_row_bytes(m.hidden));

  check_collectives(layouts, in);  // a group no sweep can serve: exit 2 before any timing

  harness::Runner runner(world, harness::timing_from(c.common));
  const double budget = c.advise_budget_s > 0 ? c.advise_budget_s : (gpu ? 20.0 : 3.0);
  const double timed_calls = runner.options().warmup + runner.options().iterations + 1.0;
  std::vector<reports::Measurement> results;

  auto sops = gpu ? make_cuda_std_ops(world.device()) : make_host_std_ops();
  const double rate = gemm_rate(*sops, world.device(), gpu);
  std::vector<CalRun> runs;
  for (const auto& l : layouts) {
    CalRun r = m.block == Block::standard ? std_cal(m, l, c.tokens, act_b, rate, budget, timed_calls, gpu)
                                          : magi2_cal(m, c.tokens * c.gpus, act_b, rate, budget, timed_calls);
    if (cals.count(r.key) || std::any_of(runs.begin(), runs.end(), [&](const CalRun& x) { return x.key == r.key; })) continue;
    runs.push_back(std::move(r));
  }
  // Real routing for the imbalance at each EP (the standard block; MAGI-2's ranks are equal).
  std::int64_t sample = 0;
  if (m.block == Block::standard) {
    std::int64_t need = 0;
    for (const auto& l : layouts)
      if (l.ep > 1 && !imbs.count(l.label)) need = std::max<std::int64_t>(need, 2 * l.ep * c.tokens * l.tp);
    const auto afford = static_cast<std::int64_t>(rate * budget / (2.0 * double(m.experts * m.hidden)));
    sample = need == 0 ? 0 : std::clamp<std::int64_t>(std::min(need, afford), std::min<std::int64_t>(need, 512), 1 << 21);
  }
  // The router is timed (warm-up + iterations calls) on as many of the sampled tokens as the
  // budget affords, at least 16; the advisor scales it by declared work.
  const double router_flops_per_token = 2.0 * double(m.experts * m.hidden);
  const std::int64_t router_tokens =
      sample > 0 ? std::clamp<std::int64_t>(static_cast<std::int64_t>(rate * budget / (timed_calls * router_flops_per_token)),
                                            std::min<std::int64_t>(sample, 16), sample)
                 : 0;
  const double sample_est =
      sample > 0 ? (double(sample) + timed_calls * double(router_tokens)) * router_flops_per_token / rate : 0;
  // The imbalance of each EP layout is sampled on the host: up to 16 windows of the layout's
  // tokens (tokens x TP x EP), each token's top-k experts counted, so its cost grows with tokens x
  // ranks. Costed before any of it runs, at a rate measured here on a small probe.
  double imbalance_ops = 0;
  if (m.block == Block::standard)
    for (const auto& l : layouts)
      if (l.ep > 1 && !imbs.count(l.label)) {
        const double need = double(c.tokens) * l.tp * l.ep;
        const double windows = std::floor(double(sample) / need);
        imbalance_ops += (windows >= 1 ? std::min(windows, 16.0) : 16.0) * need * double(m.topk);
      }
  double imbalance_est = 0;
  if (imbalance_ops > 0) {
    // The probe draws from as many routed tokens as the real sample (the same memory footprint)
    // at random (the bootstrap path: the slower of the two), once.
    const std::int64_t probe_tokens = std::max<std::int64_t>(sample, 1 << 12);
    std::vector<std::int32_t> probe(static_cast<std::size_t>(probe_tokens * m.topk));
    for (std::size_t i = 0; i < probe.size(); ++i)
      probe[i] = static_cast<std::int32_t>((i * 2654435761u) % static_cast<std::uint64_t>(m.experts));
    const std::int64_t probe_need = probe_tokens + 2;  // > the routed tokens: bootstrap resampling
    const auto t0 = std::chrono::steady_clock::now();
    imbalance_from_routing(probe, m.topk, m.experts, 2, probe_need / 2, 1, 1);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double probe_ops = double(probe_need / 2 * 2) * double(m.topk);
    imbalance_est = imbalance_ops / (probe_ops / std::max(s, 1e-6));
  }
  double total_est = sample_est + imbalance_est;
  for (const auto& r : runs) total_est += r.estimate_s;
  if (total_est > harness::kAskAboveSeconds && !c.common.yes)
    throw UsageError(fmt::format(
        "--advise: estimated {} in all on {} ({} of it sampling the expert imbalance: {:.3g} token-expert counts over "
        "the EP layouts at --tokens {}); pass --yes to run it anyway, or lower --tokens (or --advise-budget-s)",
        cli::format_duration(total_est), world.device().name(), cli::format_duration(imbalance_est), imbalance_ops,
        c.tokens));
  if (ctx.is_root()) {
    std::fprintf(stderr,
                 "layerbench-moe --advise: %zu layouts of %s on %d GPUs; %zu one-rank calibration runs%s on %s, "
                 "estimated %s in all (--advise-budget-s %g per run: lower it to shrink the calibration shapes; "
                 "--calibration FILE reuses a previous run's)\n",
                 layouts.size(), m.name.c_str(), c.gpus, runs.size(),
                 sample > 0 ? fmt::format(" and routing of {} tokens", sample).c_str() : "", world.device().name().c_str(),
                 cli::format_duration(total_est).c_str(), budget);
    std::fflush(stderr);
  }
  std::vector<double> weights;
  for (const auto& r : runs) weights.push_back(std::max(r.estimate_s, 1e-3));
  if (sample > 0) weights.insert(weights.begin(), std::max(sample_est, 1e-3));
  cli::Progress progress("advise calibration", weights.size(), weights);
  std::vector<std::int32_t> ids;
  if (sample > 0) {
    Calibrated router;
    const bool need_router = !cals.count("calibration/router");
    ids = route_sample(ctx, m, sample, c.common.seed, need_router ? &runner : nullptr, &router, &results, router_tokens);
    if (need_router) cals["calibration/router"]["router_full"] = router;
    progress.step(fmt::format("routed {} tokens", sample));
  }
  for (const auto& l : layouts)
    if (m.block == Block::standard && !imbs.count(l.label))
      imbs[l.label] = imbalance_from_routing(ids, m.topk, m.experts, l.ep, c.tokens * l.tp, 16, c.common.seed);
  for (const auto& r : runs) {
    cals[r.key] = time_cal(ctx, c, r, runner, results);
    progress.step(r.key);
  }
  progress.finish();

  std::vector<reports::Prediction> preds;
  nlohmann::json advice = nlohmann::json::array(), imb_json = nlohmann::json::object();
  const double L = double(m.moe_layers);
  for (const auto& l : layouts) {
    const std::string key = m.block == Block::standard ? "calibration/" + l.label : "calibration/magi2";
    const Imbalance imb = imbs.count(l.label) ? imbs.at(l.label) : Imbalance{};
    Calibration cal = cals.at(key);
    if (cals.count("calibration/router")) cal["router_full"] = cals.at("calibration/router").begin()->second;
    if (m.block == Block::standard)
      imb_json[l.label] = {{"median", imb.factor.median}, {"lo", imb.factor.lo}, {"hi", imb.factor.hi}, {"source", imb.source}};
    reports::Prediction p = predict_layout(l, in, cal, imb);
    nlohmann::json a = reports::to_json(p);
    a.update({{"layout", l.label}, {"ep", l.ep}, {"tp", l.tp}, {"forward_ms", p.total.median * L}});
    advice.push_back(std::move(a));
    preds.push_back(std::move(p));
  }
  preds = reports::ranked(std::move(preds));
  const std::string title = fmt::format("MoE layout advice for {} GPUs ({} per node): {}, {} tokens per GPU", c.gpus,
                                        c.gpus_per_node, m.name, c.tokens);
  std::string md = reports::to_markdown(reports::advice_section(title, preds, "layout", "predicted layer ms"), 3);
  md += fmt::format("Forward (x {} MoE layers) and the share of dispatch + combine in the layer:\n", m.moe_layers);
  for (const auto& p : preds) {
    double a2a = 0;
    for (const auto& [n, x] : p.parts)
      if (n == "ep_dispatch" || n == "ep_combine" || n == "ep_undispatch") a2a += x.median;
    md += fmt::format("- {}: {:.2f} ms [{:.2f}, {:.2f}]; dispatch + combine {:.1f}%\n", p.label, p.total.median * L,
                      p.total.lo * L, p.total.hi * L, 100 * a2a / p.total.median);
  }
  md += "\nBest: " + deciding_component(preds.front(), preds.size() > 1 ? &preds[1] : nullptr) + ".\n";
  md += "\n" + reports::notes_markdown("Where every figure comes from", preds);
  md += fmt::format(
      "\nInterval: sum of the parts' p10 .. p90 (expert compute and the all-to-allv also over the imbalance's p10 .. "
      "p90), widened by ±{:.0f}% of the median. Local parts are one-rank layers timed on this device at the layout's "
      "per-rank shape, scaled by declared work (FLOPs, or bytes for copies) where the shape was shrunk to the budget. "
      "Not modelled: overlap of communication with compute (parts are summed), contention between groups, the network "
      "topology beyond GPUs per node, other devices than the one timed, the spread from one process to the next (the "
      "calibration is one process: host-bound parts, such as a launch-bound per-expert loop, shift with the host's "
      "state; run the advice twice to see it).\n",
      100 * c.margin);
  if (!rejected.empty()) {
    md += fmt::format("\nLayouts of {} GPUs that do not serve {}:\n", c.gpus, m.name);
    for (const auto& r : rejected) md += "- " + r + "\n";
  }
  const nlohmann::json config = {{"advise", true}, {"gpus", c.gpus}, {"gpus_per_node", c.gpus_per_node},
                                 {"model_name", m.name}, {"model", to_json(m)}, {"tokens", c.tokens},
                                 {"coll", c.coll_files}, {"coll_inter", c.coll_inter_files}, {"coll_rescale", c.coll_rescale},
                                 {"inter_gbps", c.inter_gbps}, {"inter_latency_us", c.inter_latency_us},
                                 {"margin", c.margin}, {"advise_budget_s", budget}, {"calibration", c.calibration},
                                 {"imbalance", imb_json}, {"routing_sample_tokens", sample},
                                 {"dense_gemm_rate_flops", rate}, {"act_bytes", act_b},
                                 {"precision_key", precision_key(c)},
                                 {"dispatch_row_bytes", in.dispatch_row_bytes > 0 ? in.dispatch_row_bytes
                                                                                   : double(m.hidden) * act_b}};
  if (ctx.is_root()) std::fputs(md.c_str(), harness::text_stream(c.common));
  const auto doc = harness::make_document(ctx, runner, config, results, {{"advice", advice}});
  harness::write_outputs(ctx, c.common, doc, results, md);
  return 0;
}

}  // namespace layerbench::moe
