// The one profile driver (bench/moe/driver.hpp): every component of the family's table timed on
// its own over the layer's persistent buffers (filled by a checked forward first), rank-max
// samples, each component with declared FLOPs in the same iterations as the dense reference.
#include "bench/moe/driver.hpp"

#include "bench/moe/profile.hpp"
#include "collectives/error.hpp"
#include "common/cli/progress.hpp"
#include "common/json_text.hpp"
#include "moe/fp8_lt.hpp"
#include "moe/init.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

namespace layerbench::moe {

using harness::Clock;

bool bitwise_equal(Device& dev, const void* x, const void* y, std::size_t bytes) {
  const auto a = dev.download<std::uint8_t>(x, bytes);
  const auto b = dev.download<std::uint8_t>(y, bytes);
  return std::memcmp(a.data(), b.data(), bytes) == 0;
}

namespace {

// Host synchronisations inside one forward (workspaces already sized), the maximum over ranks:
// zero lets the host run ahead and the layer be captured in a CUDA graph.
double host_syncs_per_layer(LayerInterface& layer, const void* x, void* out) {
  auto& dev = layer.ep().device();
  const Stream s = dev.compute_stream();
  const auto h0 = layer.host_syncs();
  layer.forward(x, out, s);
  dev.synchronize(s);
  double hs = static_cast<double>(layer.host_syncs() - h0);
  layer.ep().control_max(std::span<double>(&hs, 1));
  return hs;
}

// The layer and the stack captured once as CUDA graphs and replayed: `whole_layer_graph` and
// `<stack>_graph` beside the eager rows, same clock. Only a layer with no host synchronisation
// inside can be captured (otherwise the reason is recorded); the replayed layer must reproduce
// the eager layer's output bit for bit.
using AddFn = std::function<void(const std::string&, const std::function<void(Stream)>&, Clock, bool stack)>;
void add_graph_rows(LayerInterface& layer, nlohmann::json& checks, const AddFn& add, const void* x, void* out,
                    const std::string& stack_name, const std::function<void(Stream)>& stack_body) {
  auto& dev = layer.ep().device();
  const Stream s = dev.compute_stream();
  if (layer.ep().backend() != Backend::cuda) {
    checks["graph"] = {{"captured", false}, {"reason", "the host backend has no CUDA graphs"}};
    return;
  }
  if (const double hs = checks.value("host_syncs_per_layer", 0.0); hs != 0.0) {
    checks["graph"] = {{"captured", false},
                       {"reason", fmt::format("the layer synchronises with the host {:g} time(s) per forward (a counts "
                                              "read-back sizes what follows): a graph cannot hold it", hs)}};
    return;
  }
  auto g_layer = std::shared_ptr<Graph>(dev.capture(s, [&](Stream st) { layer.forward(x, out, st); }));
  layer.forward(x, out, s);
  Buffer eager = layer.make_activation();
  dev.copy(eager.data(), out, eager.bytes(), s);
  dev.memset(out, 0x7f, eager.bytes(), s);
  g_layer->launch(s);
  dev.synchronize(s);
  double differs = bitwise_equal(dev, eager.data(), out, eager.bytes()) ? 0.0 : 1.0;
  layer.ep().control_max(std::span<double>(&differs, 1));
  checks["graph"] = {{"captured", true}, {"replay_bit_identical", differs == 0.0}};
  if (differs != 0.0) throw Error("moe graph check failed: the replayed layer differs from the eager layer");
  add("whole_layer_graph", [g_layer](Stream st) { g_layer->launch(st); }, Clock::device, false);
  if (stack_body) {
    auto g_stack = std::shared_ptr<Graph>(dev.capture(s, stack_body));
    add(stack_name + "_graph", [g_stack](Stream st) { g_stack->launch(st); }, Clock::host, true);
  }
}

}  // namespace

int run_profile(harness::Context& ctx, const RunConfig& c, Family& family) {
  Communicator& world = ctx.world;
  LayerInterface& layer = family.layer();
  // Every flag that names a component is checked against the table before any work.
  const ComponentTable tab = family.table();
  const auto targets = what_if_targets(c, tab);
  if (c.repeat > 1 && world.backend() != Backend::cuda)
    throw UsageError("--repeat repeats the components' ratios to the dense GEMM reference, which the host backend does "
                     "not print (its reference is a naive fp32 loop, not a tuned GEMM): use it with --backend cuda");
  if (c.graph && world.backend() != Backend::cuda)
    throw UsageError("--graph captures the layer in CUDA graphs: use it with --backend cuda");
  auto& dev = world.device();
  const Stream s = dev.compute_stream();

  Buffer x = layer.make_activation(), out = layer.make_activation();
  layer.fill_input(x.data(), c.common.seed, s);
  layer.forward(x.data(), out.data(), s);  // every buffer holds live data from here on
  dev.synchronize(s);
  nlohmann::json checks = c.skip_check ? nlohmann::json{{"skipped", true}} : family.check(x.data());
  layer.forward(x.data(), out.data(), s);
  dev.synchronize(s);
  checks["host_syncs_per_layer"] = host_syncs_per_layer(layer, x.data(), out.data());

  harness::Runner runner(world, harness::timing_from(c.common));
  std::string telemetry_status;
  const auto sampler = make_sampler(c, world, &telemetry_status);
  {  // NVML's energy counter on every rank, or energy stays absent (null) on all of them
    double missing = sampler && std::isfinite(sampler->energy_j()) ? 0.0 : 1.0;
    world.control_max(std::span<double>(&missing, 1));
    if (missing == 0) runner.set_energy_meter([smp = sampler.get()] { return smp->energy_j(); });
  }

  // Dense bf16 (fp32 on host) GEMM reference: timed alone at the end, and in the same iterations
  // as every component that declares FLOPs (their ratio to it comes from those pairs).
  DenseOps& dense_ops = layer.dense();
  const DType act = dense_ops.act();
  const std::int64_t g = c.dense_gemm_size > 0 ? c.dense_gemm_size : (world.backend() == Backend::cuda ? 8192 : 128);
  const auto gb = static_cast<std::size_t>(g * g) * layer.act_bytes();
  Buffer dA = dev.alloc(gb), dB = dev.alloc(gb), dC = dev.alloc(gb);
  dense_ops.fill(dA.data(), act, {.seed = c.common.seed, .tensor = kDenseA, .scale = 1.0f, .rows = g, .cols = g, .full_cols = g, .ld = g}, s);
  dense_ops.fill(dB.data(), act, {.seed = c.common.seed, .tensor = kDenseB, .scale = 1.0f, .rows = g, .cols = g, .full_cols = g, .ld = g}, s);
  dev.synchronize(s);
  const std::function<void(Stream)> dense_body = [&](Stream st) {
    dense_ops.linear(dA.data(), dB.data(), dC.data(), {.m = g, .n = g, .k = g, .lda = g, .ldw = g, .ldc = g}, false, st);
  };
  const std::string dense_name = "dense_gemm_reference";
  // FP8 components (Component::precision) are rated against an FP8 dense GEMM of the same size
  // (cuBLASLt e4m3, rowwise scales: torch._scaled_mm's recipe), on every rank or none.
  const auto table = layer.components();
  const auto is_fp8 = [](const std::string& precision) { return precision.rfind("fp8", 0) == 0; };
  const bool has_fp8 = std::any_of(table.begin(), table.end(), [&](const Component& comp) {
    return comp.work.flops > 0 && is_fp8(comp.precision);
  });
  std::unique_ptr<Fp8DenseReference> fp8_ref;
  std::string fp8_ref_note;
  if (has_fp8 && world.backend() == Backend::cuda) {
    fp8_ref_note = fp8_lt_unsupported(g, g, g);
    double missing = fp8_ref_note.empty() ? 0.0 : 1.0;
    world.control_max(std::span<double>(&missing, 1));
    if (missing == 0.0)
      fp8_ref = make_fp8_dense_reference(dev, g, c.common.seed);
    else if (fp8_ref_note.empty())
      fp8_ref_note = "another rank's device has no cuBLASLt e4m3 GEMM";
  }
  const std::string fp8_name = "dense_gemm_reference_fp8";
  const std::function<void(Stream)> fp8_body = [&](Stream st) { fp8_ref->run(st); };

  // The expert load of the timed input, measured before any timing changes the layer's state;
  // the stack's expert tiles by layer under either input when a what-if or removal will run.
  nlohmann::json load = family.load(x.data());
  if (c.layers > 1 && (!targets.empty() || !c.ab_drops.empty()))
    load["stack_expert_tiles"] = stack_expert_tiles(layer, x.data(), c.layers);

  auto probes = family.probes(x.data(), out.data());
  const auto figures = family.stacks();
  const bool capturable = world.backend() == Backend::cuda && checks.value("host_syncs_per_layer", 0.0) == 0.0;
  const std::size_t graph_rows = c.graph && capturable ? (c.layers > 1 ? 2 : 1) : 0;
  std::size_t n_rows = table.size() + probes.size() + 1 + (fp8_ref ? 1 : 0) + (c.layers > 1 ? figures.size() : 0) + graph_rows;
  std::optional<cli::Progress> progress;
  if (world.rank() == 0) progress.emplace("profile", n_rows);

  // Every component declares its place in the layer (role, parent) and its work once; shares,
  // rates and the composition are derived from that by reports/.
  struct Rated {
    std::string name;
    std::function<void(Stream)> body;
    bool fp8 = false;  // paired with the FP8 reference
  };
  std::vector<Rated> rated;  // for --repeat
  std::vector<ComponentResult> comps;
  const std::string group = family.group();
  auto add = [&](const std::string& name, const std::function<void(Stream)>& body, Clock clock, reports::Role role,
                 const std::string& parent, reports::Work work, int instances, const std::string& precision = "") {
    ComponentResult r;
    if (std::getenv("LB_MOE_TRACE")) std::fprintf(stderr, "[moe] %s\n", name.c_str());
    const double t0 = telemetry::Sampler::now();
    if (work.flops > 0) {
      const bool fp8 = fp8_ref && is_fp8(precision);
      r.m = fp8 ? runner.time_interleaved(name, body, fp8_name, fp8_body, clock)
                : runner.time_interleaved(name, body, dense_name, dense_body, clock);
      rated.push_back({name, body, fp8});
      if (!precision.empty()) r.m.params["precision"] = precision;
    } else {
      r.m = runner.time(name, body, clock);
    }
    r.telemetry = window_covariates(world, sampler.get(), t0, telemetry::Sampler::now());
    if (progress) progress->step(name);
    r.m.group = group;
    r.m.role = role;
    r.m.parent = parent;
    r.m.work = work;
    r.m.instances = instances;
    comps.push_back(std::move(r));
  };
  auto add_row = [&](const FamilyRow& row) { add(row.name, row.body, row.clock, row.role, row.parent, row.work, 1); };
  auto probes_after = [&](const std::string& name) {
    for (const auto& p : probes)
      if (p.after == name) add_row(p);
  };
  for (const auto& comp : table) {
    if (auto instead = family.instead_of(comp)) {
      if (instead->body) add_row(*instead);
    } else {
      std::function<void(Stream)> body;
      if (comp.role == reports::Role::total)
        body = [&](Stream st) { layer.forward(x.data(), out.data(), st); };
      else
        body = [&layer, n = comp.name](Stream st) { layer.run_component(n, st); };
      add(comp.name, body, comp.host_clock ? Clock::host : Clock::device, comp.role, comp.parent, comp.work, 1,
          comp.precision);
      if (!comp.kernel_path.empty()) comps.back().m.params["kernel_path"] = comp.kernel_path;
    }
    probes_after(comp.name);
  }
  probes_after("");

  // Stack figures: L layers from the same input (or chained), the input copied in each time.
  Buffer sa = layer.make_activation(), sb = layer.make_activation();
  const StackInput input = parse_stack_input(c.stack_input);
  auto stack_body = [&](const LayerFn& one) {
    return [&, one](Stream st) {
      dev.copy(sa.data(), x.data(), sa.bytes(), st);
      run_stack(one, sa.data(), sb.data(), c.layers, st, input);
    };
  };
  if (c.layers > 1)
    for (const auto& f : figures) add(f.name, stack_body(f.layer), f.clock, reports::Role::stack, "", {}, c.layers);
  if (c.graph) {
    // The graph replays the layer as forward() runs it; the stack graph replays the last figure
    // (the stack of forward()s) when --layers > 1.
    const StackFigure* fig = nullptr;
    for (const auto& f : figures) fig = &f;
    add_graph_rows(
        layer, checks,
        [&](const std::string& name, const std::function<void(Stream)>& body, Clock clock, bool is_stack) {
          add(name, body, clock, is_stack ? reports::Role::stack : reports::Role::probe, "", {}, is_stack ? c.layers : 1);
        },
        x.data(), out.data(), fig ? fig->name : std::string("stack"),
        c.layers > 1 && fig ? std::function<void(Stream)>(stack_body([&](const void* in, void* o, Stream st) {
          layer.forward(in, o, st);
        }))
                            : std::function<void(Stream)>());
  }

  DenseRef dense;
  dense.m = runner.time(dense_name, dense_body);
  if (progress) progress->step(dense_name);
  dense.size = g;
  dense.m.group = group;
  dense.m.role = reports::Role::reference;
  dense.m.work.flops = 2.0 * double(g) * double(g) * double(g);
  std::optional<DenseRef> dense_fp8;
  if (fp8_ref) {
    dense_fp8.emplace();
    dense_fp8->m = runner.time(fp8_name, fp8_body);
    dense_fp8->size = g;
    dense_fp8->m.group = group;
    dense_fp8->m.role = reports::Role::reference;
    dense_fp8->m.work.flops = dense.m.work.flops;
    dense_fp8->describe = fp8_ref->describe();
    if (progress) progress->step(fp8_name);
  }
  dense.note = fp8_ref_note;

  // --repeat: the components with declared FLOPs timed against the reference again (runs 2..R),
  // for the run-to-run spread of their ratios beside each run's own interval.
  std::vector<std::vector<reports::Measurement>> repeats;
  if (c.repeat > 1) {
    std::vector<reports::Measurement> first;
    for (const auto& r : comps)
      if (!r.m.reference.empty()) first.push_back(r.m);
    repeats.push_back(std::move(first));
    std::optional<cli::Progress> rp;
    if (world.rank() == 0) rp.emplace("repeat runs", static_cast<std::size_t>(c.repeat - 1) * rated.size());
    for (int run = 1; run < c.repeat; ++run) {
      std::vector<reports::Measurement> ms;
      for (const auto& r : rated) {
        ms.push_back(r.fp8 ? runner.time_interleaved(r.name, r.body, fp8_name, fp8_body)
                           : runner.time_interleaved(r.name, r.body, dense_name, dense_body));
        if (rp) rp->step(fmt::format("run {} {}", run + 1, r.name));
      }
      repeats.push_back(std::move(ms));
    }
    if (rp) rp->finish();
  }

  // Each removal A/B runs right after its component's replication what-if, so that the prediction
  // and the removal are measured in one phase of the process (a small part's removal measured
  // after other what-ifs, some at the power cap, differed from its prediction by more than either
  // interval: results/moe/2026-12-07-h100-f); a removal without a what-if runs after them all.
  std::vector<std::optional<AbResult>> dropped(c.ab_drops.size());
  auto drop_after = [&](const std::vector<harness::WhatIfResult>& so_far) {
    const auto& last = so_far.back();
    if (last.target.method != harness::WhatIfMethod::replicate) return;
    for (std::size_t i = 0; i < c.ab_drops.size(); ++i)
      if (c.ab_drops[i] == last.target.component && !dropped[i])
        dropped[i] = run_drop_ab(layer, x.data(), c, c.ab_drops[i], so_far, sampler.get());
  };
  const auto what_ifs = run_what_ifs(layer, x.data(), c, targets, comps, sampler.get(), drop_after);
  std::optional<AbResult> ab = family.own_ab(x.data(), comps, what_ifs, sampler.get());
  std::vector<AbResult> drops;
  for (std::size_t i = 0; i < c.ab_drops.size(); ++i)
    drops.push_back(dropped[i] ? std::move(*dropped[i])
                               : run_drop_ab(layer, x.data(), c, c.ab_drops[i], what_ifs, sampler.get()));

  ProfileInputs in{c,        family, family.ops_text(), checks, load,    comps, dense, ab, what_ifs, telemetry_status,
                   drops,    repeats, dense_fp8 ? &*dense_fp8 : nullptr};
  finish_report(ctx, runner, in);
  return 0;
}

}  // namespace layerbench::moe
