// Component profile of the MoE layer: every component timed on its own over the layer's
// persistent buffers (filled by a checked forward first), rank-max samples.
#include "bench/moe/profile.hpp"
#include "common/json_text.hpp"

#include "common/cli/progress.hpp"

#include "collectives/error.hpp"
#include "common/cli.hpp"
#include "moe/magi2/expert_check.hpp"
#include "moe/init.hpp"
#include "bench/moe/advise.hpp"
#include "bench/moe/model_flags.hpp"
#include "bench/moe/report.hpp"
#include "bench/moe/std_profile.hpp"
#include "bench/moe/whatif.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

namespace layerbench::moe {

using harness::Clock;

namespace {
// --expert-gemm (the profile's cuda expert paths) and --expert-table (the standard block's per-shape table).
void add_expert_path_flags(CLI::App& app, RunConfig& c) {
  std::map<std::string, ExpertPath> paths;
  std::string help = "cuda expert path:";
  for (const auto& e : kExpertPaths) {
    if (!e.in_profile) continue;
    paths.emplace(std::string(e.name), e.path);
    help += fmt::format(" {} ({});", e.name, e.help);
  }
  help += " the kernel-study variants are timed by layerbench-moe-kernels";
  std::vector<std::string> names;
  for (const auto& [name, path] : paths) names.push_back(name);
  harness::mark_cuda_only(app.add_option_function<std::string>(
         "--expert-gemm", [&c, paths](const std::string& s) { c.expert_gemm = paths.at(s); }, help)
      ->check(CLI::IsMember(names))
      ->default_str("auto"));
  harness::mark_cuda_only(app.add_option(
      "--expert-table", c.expert_table,
      "standard block: the per-shape expert path table written by layerbench-moe-kernels --models "
      "(grouped, per-expert, multi-stream or padded cuBLAS, or the grouped wgmma kernels; shapes not in it run per-expert)"));
}
}  // namespace

void add_flags(CLI::App& app, RunConfig& c) {
  constexpr std::int64_t big = std::int64_t{1} << 40;  // the real bounds are in validate()
  add_model_flags(app, c);
  add_advise_flags(app, c);
  cli::add_int(app, "--hidden", c.geo.hidden, "override: hidden size", std::int64_t{1}, big);
  cli::add_int(app, "--moe-heads", c.geo.heads, "override (MAGI-2): MoE heads (d_head = hidden / heads)", std::int64_t{1}, big);
  cli::add_int(app, "--experts", c.geo.experts, "override: routed experts (MAGI-2: per head)", std::int64_t{1}, big);
  cli::add_int(app, "--topk", c.geo.topk, "override: experts per token (MAGI-2: per (token, head))", std::int64_t{1}, big);
  cli::add_int(app, "--intermediate,--moe-intermediate", c.geo.intermediate,
               "override: expert intermediate size (MAGI-2: also the shared MLPs')", std::int64_t{1}, big);
  cli::add_real(app, "--scale", c.geo.scale, "override: routed scaling factor", num::RealRange::positive(1e6));
  constexpr std::int64_t most_tokens = std::int64_t{1} << 30;  // counts become MPI ints
  cli::add_int(app, "--tokens", c.tokens, "local tokens per rank (sp) or replicated tokens (tp)", std::int64_t{1}, most_tokens);
  cli::add_int_list(app, "--split-sizes", c.split_sizes, "sp: tokens per rank, one per rank", std::int64_t{1}, most_tokens);
  app.add_option("--layout", c.layout, "sp | tp");
  cli::add_int(app, "--layers", c.layers, "stack depth for the stack figures and --ab", 1, 10000);
  app.add_option("--stack-input", c.stack_input,
                 "where the layers of the --layers stack (stack figures, what-if, --ab) take their input: same (every "
                 "layer from the same input: a component left out leaves its output as written, so a removal takes "
                 "away its own work only) or chained (each layer from the previous one's output)");
  cli::add_int(app, "--moe-layers", c.moe_layers, "override: MoE layers per forward (derived lines)", 1, 10000);
  app.add_option_function<std::vector<std::string>>(
         "--ab",
         [&c](const std::vector<std::string>& v) {
           for (const auto& a : v) {
             if (a.rfind("drop:", 0) == 0) c.ab_drops.push_back(a.substr(5));
             else c.ab = a;
           }
         },
         "metadata: interleaved A/B, per-layer exchange vs reused splits, checked against the exchange what-if "
         "(added to --what-if when missing); drop:COMPONENT (repeatable): the stack with and without the component, "
         "checked against its replication what-if (added when missing)")
      ->allow_extra_args(false);
  cli::add_int(app, "--pairs", c.pairs, "A/B pairs (the cap with --ab-sequential; drop: A/Bs stop once the measured "
               "removal's interval is within half its prediction's, after at least 31)", 2, 1'000'000);
  cli::add_int(app, "--prime-stacks", c.prime_stacks,
               "untimed stacks of the same variant run before a timed stack of the what-if rounds or the A/B pairs "
               "whose neighbour ran another variant (a power-capped GPU carries its clocks from one stack into the "
               "next); 0 = off",
               0, 100);
  app.add_flag("--ab-sequential", c.ab_sequential,
               "stop the A/B at the first pair where an always-valid confidence sequence excludes 0 or lies inside "
               "+-equivalence (alpha 0.05)");
  app.add_option("--ab-equivalence", c.ab_equivalence, "--ab-sequential: equivalence margin, 1% of the base or ms");
  app.add_option("--confidence", c.confidence, "confidence level of every interval (alpha = 1 - confidence)");
  add_expert_path_flags(app, c);
  cli::add_int(app, "--dense-gemm-size", c.dense_gemm_size, "reference dense GEMM M=N=K (0: auto)",
               decltype(c.dense_gemm_size){0}, decltype(c.dense_gemm_size){65536});
  app.add_flag("--skip-check", c.skip_check, "skip the pre-timing consistency check");
  app.add_flag("--graph", c.graph, "also time the layer and the --layers stack captured as CUDA graphs (needs an expert path with no host synchronisation, e.g. device)");
  app.add_option("--what-if", c.what_if, "what-if (critical-path) profile of these components inside the --layers "
                 "stack: COMPONENT[@begin|@end][,...] (a device spin on the component's stream, a host wait for the "
                 "sequence-size exchange)");
  app.add_option("--what-if-levels", c.what_if_levels, "injected delays per instance in us")->delimiter(',');
  cli::add_int(app, "--what-if-rounds", c.what_if_rounds, "what-if rounds (each visits every level once; replicate: the minimum)", 2, 100000);
  app.add_option("--what-if-method", c.what_if_method,
                 "auto (replicate device components, delay the idle ones: the sequence-size exchange, tp_reduction, "
                 "@begin edges), replicate (run the component 0-3 times per instance), delay (inject idle)");
  cli::add_real(app, "--what-if-seconds", c.what_if_seconds, "replicate: cap on the stacks' time per component (s)",
                num::RealRange::positive(86400));
  cli::add_int(app, "--repeat", c.repeat, "time the components against the dense reference this many times "
               "(run-to-run spread of the reference ratios beside each run's interval)", 1, 100);
  app.add_option("--telemetry", c.telemetry, "GPU telemetry during every measurement: auto (on the cuda backend), gpu, off");
  cli::add_real(app, "--telemetry-period", c.telemetry_period_ms, "telemetry sampling period in ms",
                num::RealRange::closed(1, 10000));
  cli::add_real(app, "--framework-exchange-ms", c.framework_exchange_ms,
                "a framework's sequence-size exchange, measured elsewhere, for the profile's 'not timed' lines",
                num::RealRange::non_negative(1e6));
}

std::unique_ptr<MoeLayer> make_layer(const RunConfig& c, Communicator& ep, std::uint64_t seed) {
  validate_for_world(c, ep.size());
  const Layout layout = parse_layout(c.layout);
  std::vector<std::int64_t> splits;
  if (layout == Layout::sp)
    splits = c.split_sizes.empty() ? std::vector<std::int64_t>(static_cast<std::size_t>(ep.size()), c.tokens)
                                   : c.split_sizes;
  else
    splits = {c.tokens};
  const Plan plan = make_plan(c.geo, layout, ep.rank(), ep.size(), splits);
  auto ops = ep.backend() == Backend::cuda ? make_cuda_ops(ep.device(), c.expert_gemm) : make_host_ops();
  return std::make_unique<MoeLayer>(plan, ep, std::move(ops), seed);
}

StackInput parse_stack_input(const std::string& s) {
  if (s == "same") return StackInput::same;
  if (s == "chained") return StackInput::chained;
  throw UsageError(fmt::format("--stack-input '{}': expected same or chained", s));
}

std::string to_string(StackInput i) { return i == StackInput::same ? "same" : "chained"; }

void* run_stack(MoeLayer& layer, void* a, void* b, int layers, bool reuse, Stream s, StackInput input) {
  const auto splits = std::span<const std::int64_t>(layer.plan().splits);
  for (int l = 0; l < layers; ++l) {
    // NOTES: this is where the transformer hands its request-scoped split to each MoE layer;
    // without it every layer pays a scalar all_gather plus a host read.
    layer.forward(a, b, reuse ? std::optional(splits) : std::nullopt, s);
    if (input == StackInput::chained) std::swap(a, b);
  }
  return input == StackInput::chained ? a : b;
}

namespace {

bool bitwise_equal(Device& dev, const void* x, const void* y, std::size_t bytes) {
  const auto a = dev.download<std::uint8_t>(x, bytes);
  const auto b = dev.download<std::uint8_t>(y, bytes);
  return std::memcmp(a.data(), b.data(), bytes) == 0;
}

// Reused split sizes and the per-layer exchange must give bit-identical output, the first
// with zero scalar exchanges; the output must be finite.
nlohmann::json check(MoeLayer& layer, const void* x, Stream s) {
  auto& dev = layer.ep().device();
  Buffer o1 = layer.make_activation(), o2 = layer.make_activation();
  const auto n0 = layer.ep().scalar_exchange_count();
  layer.forward(x, o1.data(), std::span<const std::int64_t>(layer.plan().splits), s);
  dev.synchronize(s);
  const auto n1 = layer.ep().scalar_exchange_count();
  layer.forward(x, o2.data(), std::nullopt, s);
  dev.synchronize(s);
  const auto n2 = layer.ep().scalar_exchange_count();
  const std::size_t bytes = o1.bytes();
  double same = bitwise_equal(dev, o1.data(), o2.data(), bytes) ? 1.0 : 0.0;
  double finite = 1.0;
  if (layer.act_bytes() == 4) {
    for (float v : dev.download<float>(o1.data(), bytes / 4)) finite = std::isfinite(v) ? finite : 0.0;
  } else {
    for (std::uint16_t v : dev.download<std::uint16_t>(o1.data(), bytes / 2))
      finite = (v & 0x7f80u) == 0x7f80u ? 0.0 : finite;
  }
  double flags[2] = {1.0 - same, 1.0 - finite};
  layer.ep().control_max(flags);
  nlohmann::json j = {{"reuse_vs_exchange_bit_identical", flags[0] == 0.0},
                      {"output_finite", flags[1] == 0.0},
                      {"scalar_exchanges_reused", n1 - n0},
                      {"scalar_exchanges_per_layer_path", n2 - n1}};
  const bool sp = layer.plan().layout == Layout::sp;
  if (flags[0] != 0.0 || flags[1] != 0.0 || n1 != n0 || (sp && n2 - n1 != 1))
    throw Error("moe consistency check failed: " + json_text(j));
  return j;
}

double gemm_flops(double m, double n, double k) { return 2.0 * m * n * k; }

// The layer (reused split sizes) and the stack captured once as CUDA graphs and replayed:
// `<name>_graph` beside the eager components, same clock. Only a path with no host
// synchronisation inside the layer can be captured (otherwise the reason is recorded); the
// replayed layer must reproduce the eager layer's output bit for bit.
using AddFn = std::function<void(const std::string&, const std::function<void(Stream)>&, Clock)>;
void add_graph_components(MoeLayer& layer, nlohmann::json& checks, const AddFn& add, const void* x, void* out,
                          const std::function<void(Stream)>& stack_body) {
  auto& dev = layer.ep().device();
  const Stream s = dev.compute_stream();
  const auto splits = std::span<const std::int64_t>(layer.plan().splits);
  if (checks.value("host_syncs_per_layer", 0.0) != 0.0) {
    checks["graph"] = {{"captured", false}, {"reason", "the expert path synchronises with the host inside the layer"}};
    return;
  }
  auto g_layer = std::shared_ptr<Graph>(dev.capture(s, [&](Stream st) { layer.forward(x, out, splits, st); }));
  layer.forward(x, out, splits, s);
  Buffer eager = layer.make_activation();
  dev.copy(eager.data(), out, eager.bytes(), s);
  dev.memset(out, 0x7f, eager.bytes(), s);
  g_layer->launch(s);
  dev.synchronize(s);
  double differs = bitwise_equal(dev, eager.data(), out, eager.bytes()) ? 0.0 : 1.0;
  layer.ep().control_max(std::span<double>(&differs, 1));
  checks["graph"] = {{"captured", true}, {"replay_bit_identical", differs == 0.0}};
  if (differs != 0.0) throw Error("moe graph check failed: the replayed layer differs from the eager layer");
  add("whole_layer_graph", [g_layer](Stream st) { g_layer->launch(st); }, Clock::device);
  if (stack_body) {
    auto g_stack = std::shared_ptr<Graph>(dev.capture(s, stack_body));
    add("stack_reused_split_sizes_graph", [g_stack](Stream st) { g_stack->launch(st); }, Clock::host);
  }
}

}  // namespace

int run(harness::Context& ctx, const RunConfig& c) {
  if (c.list_models || c.describe) {
    if (ctx.is_root()) {
      const std::string text = c.list_models ? list_models_text() : json_text(to_json(c.model), 1) + "\n";
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
    }
    return 0;
  }
  if (c.advise) return run_advise(ctx, c);
  if (c.model.block == Block::standard) return run_standard(ctx, c);
  Communicator& world = ctx.world;
  const auto targets = what_if_targets(c, parse_layout(c.layout));  // bad --what-if: before any work
  if (c.repeat > 1 && world.backend() != Backend::cuda)
    throw UsageError("--repeat repeats the components' ratios to the dense GEMM reference, which the host backend does "
                     "not print (its reference is a naive fp32 loop, not a tuned GEMM): use it with --backend cuda");
  auto layer_ptr = make_layer(c, world, c.common.seed);
  MoeLayer& layer = *layer_ptr;
  const Plan& p = layer.plan();
  auto& dev = world.device();
  const Stream s = dev.compute_stream();
  const bool sp = p.layout == Layout::sp;
  const auto splits = std::span<const std::int64_t>(p.splits);

  Buffer x = layer.make_activation(), out = layer.make_activation();
  layer.fill_input(x.data(), c.common.seed, s);
  dev.synchronize(s);
  nlohmann::json checks = c.skip_check ? nlohmann::json{{"skipped", true}} : check(layer, x.data(), s);
  layer.forward(x.data(), out.data(), splits, s);  // every buffer holds live data from here on
  dev.synchronize(s);
  // Host synchronisations inside one layer (reused split sizes; workspaces already sized): the
  // expert path's counts read-back, if it has one. Zero lets the host run ahead and the layer
  // be captured as a CUDA graph.
  {
    const auto h0 = layer.ops().host_syncs();
    layer.forward(x.data(), out.data(), splits, s);
    dev.synchronize(s);
    double hs = static_cast<double>(layer.ops().host_syncs() - h0);
    world.control_max(std::span<double>(&hs, 1));
    checks["host_syncs_per_layer"] = hs;
  }

  harness::Runner runner(world, harness::timing_from(c.common));
  std::string telemetry_status;
  const auto sampler = make_sampler(c, world, &telemetry_status);
  {  // NVML's energy counter on every rank, or energy stays absent (null) on all of them
    double missing = sampler && std::isfinite(sampler->energy_j()) ? 0.0 : 1.0;
    world.control_max(std::span<double>(&missing, 1));
    if (missing == 0) runner.set_energy_meter([s = sampler.get()] { return s->energy_j(); });
  }

  // Dense bf16 (fp32 on host) GEMM reference: timed alone at the end, and in the same iterations
  // as every component that declares FLOPs (their ratio to it comes from those pairs).
  const DType act = layer.ops().act();
  const std::int64_t g = c.dense_gemm_size > 0 ? c.dense_gemm_size : (world.backend() == Backend::cuda ? 8192 : 128);
  const auto gb = static_cast<std::size_t>(g * g) * layer.act_bytes();
  Buffer dA = dev.alloc(gb), dB = dev.alloc(gb), dC = dev.alloc(gb);
  layer.ops().fill(dA.data(), act, {.seed = c.common.seed, .tensor = kDenseA, .scale = 1.0f, .rows = g, .cols = g, .full_cols = g, .ld = g}, s);
  layer.ops().fill(dB.data(), act, {.seed = c.common.seed, .tensor = kDenseB, .scale = 1.0f, .rows = g, .cols = g, .full_cols = g, .ld = g}, s);
  dev.synchronize(s);
  const std::function<void(Stream)> dense_body = [&](Stream st) {
    layer.ops().linear(dA.data(), dB.data(), dC.data(), {.m = g, .n = g, .k = g, .lda = g, .ldw = g, .ldc = g}, false, st);
  };
  const std::string dense_name = "dense_gemm_reference";
  // The components timed against the reference, for --repeat.
  std::vector<std::pair<std::string, std::function<void(Stream)>>> rated;
  std::vector<ComponentResult> comps;
  // Every component below, and the dense reference.
  const std::size_t n_components = 13 + (sp ? 4 : 0) + (c.layers > 1 ? 2 : 0);
  std::optional<cli::Progress> progress;
  if (world.rank() == 0) progress.emplace("profile", n_components);
  // Every component declares its place in the layer (role, parent) and its work once; shares,
  // rates and the composition are derived from that by reports/.
  using reports::Role;
  auto add = [&](const std::string& name, const std::function<void(Stream)>& body, Clock clock, Role role,
                 const std::string& parent, reports::Work work = {}, int instances = 1) {
    ComponentResult r;
    if (std::getenv("LB_MOE_TRACE")) std::fprintf(stderr, "[moe] %s\n", name.c_str());
    const double t0 = telemetry::Sampler::now();
    if (work.flops > 0) {
      r.m = runner.time_interleaved(name, body, dense_name, dense_body, clock);
      rated.emplace_back(name, body);
    } else {
      r.m = runner.time(name, body, clock);
    }
    r.telemetry = window_covariates(world, sampler.get(), t0, telemetry::Sampler::now());
    if (progress) progress->step(name);
    r.m.group = c.layout;
    r.m.role = role;
    r.m.parent = parent;
    r.m.work = work;
    r.m.instances = instances;
    comps.push_back(std::move(r));
  };
  auto moved = [](double bytes, double bus_factor = 0) { return reports::Work{.bytes = bytes, .bus_factor = bus_factor}; };
  const std::string total = "whole_layer", routed = "routed_branch";
  const double act_b = static_cast<double>(layer.act_bytes());

  // Expert load of the routed assignments of the input the components are timed on (max over
  // ranks of the busiest expert), measured before any timing changes the layer state.
  nlohmann::json load;
  {
    layer.route(s);
    const auto counts = p.heads_valid > 0 ? layer.ops().expert_counts(layer.routed_args())
                                          : std::vector<std::int64_t>{};
    double mx = 0, tot = 0, mn = counts.empty() ? 0 : 1e300;
    for (auto v : counts) {
      mx = std::max(mx, double(v));
      mn = std::min(mn, double(v));
      tot += double(v);
    }
    const double mean = counts.empty() ? 0 : tot / double(counts.size());
    double agg[2] = {mx, mean > 0 ? mx / mean : 0};
    world.control_max(agg);
    load = {{"local_experts", counts.size()}, {"assignments", tot}, {"mean_per_expert", mean},
            {"min_per_expert", mn}, {"max_per_expert_all_ranks", agg[0]},
            {"max_over_mean_all_ranks", agg[1]}};
  }

  // The expert path at this geometry against a sampled CPU reference (the route() and experts()
  // of the load measurement above are complete): 16 (token, head) pairs per rank.
  if (!c.skip_check) {
    ExpertCheck ec;
    if (p.heads_valid > 0)
      ec = check_routed_experts(dev, layer.routed_args(), layer.ops().act(), c.common.seed, 16);
    double bad = ec.ok() ? 0.0 : 1.0;
    world.control_max(std::span<double>(&bad, 1));
    checks["expert_reference"] = ec.to_json();
    if (bad != 0.0) throw Error("moe expert reference check failed (on this or another rank): " + json_text(ec.to_json()));
  }

  // The stack's expert work by layer under either input (what a removal A/B in a chained stack
  // would also change).
  if (c.layers > 1 && (!targets.empty() || !c.ab_drops.empty()))
    load["stack_expert_tiles"] = stack_expert_tiles(layer, x.data(), c.layers);

  // TP: the layer's [N, hidden] all-reduce. SP: the same collective as a probe over the world,
  // with the balanced token count so that every rank reduces the same number of elements.
  const std::int64_t red_tokens = sp ? p.global_tokens / p.world : p.local_tokens;
  const auto nelem = static_cast<std::size_t>(red_tokens * p.hidden);
  Buffer red_in = dev.alloc(nelem * layer.act_bytes()), red_out = dev.alloc(nelem * layer.act_bytes());
  layer.ops().fill(red_in.data(), act, {.seed = c.common.seed, .tensor = kDenseA, .scale = 1.0f, .rows = red_tokens, .cols = p.hidden, .full_cols = p.hidden, .ld = p.hidden}, s);
  dev.synchronize(s);
  auto add_tp_reduction = [&] {
    add("tp_reduction", [&](Stream st) { world.all_reduce(red_in.data(), red_out.data(), nelem, act, st); },
        Clock::device, sp ? Role::probe : Role::communication, sp ? "" : routed,
        moved(static_cast<double>(nelem) * act_b, 2.0 * (p.world - 1) / p.world));
  };
  // The layer's own component table (moe/magi2/layer_table.cpp): role, parent and declared work once,
  // the kernel path of each component in its parameters.
  for (const auto& comp : layer.components()) {
    const std::string n = comp.name;
    if (n == "tp_reduction") continue;  // timed as the collective above, after merge_linear
    std::function<void(Stream)> body;
    if (n == "whole_layer")
      body = [&](Stream st) { layer.forward(x.data(), out.data(), splits, st); };
    else if (n == "pre_norm")
      body = [&](Stream st) { layer.pre_norm(x.data(), st); };
    else
      body = [&layer, n](Stream st) { layer.run_component(n, st); };
    add(n, body, comp.host_clock ? Clock::host : Clock::device, comp.role, comp.parent, comp.work);
    if (!comp.kernel_path.empty()) comps.back().m.params["kernel_path"] = comp.kernel_path;
    if (n == "merge_linear") add_tp_reduction();
  }
  add("moe_per_layer_exchange", [&](Stream st) { layer.routed_branch(std::nullopt, st); }, Clock::host, Role::probe, "");
  add("moe_reused_split_sizes", [&](Stream st) { layer.routed_branch(splits, st); }, Clock::host, Role::probe, "");
  if (sp) {
    add("branches_serialized", [&](Stream st) { layer.branches(splits, false, st); }, Clock::device, Role::probe, "");
    add("branches_overlapped", [&](Stream st) { layer.branches(splits, true, st); }, Clock::device, Role::probe, "");
  }
  Buffer sa = layer.make_activation(), sb = layer.make_activation();
  auto stack = [&](bool reuse) {
    return [&, reuse](Stream st) {
      dev.copy(sa.data(), x.data(), sa.bytes(), st);
      run_stack(layer, sa.data(), sb.data(), c.layers, reuse, st, parse_stack_input(c.stack_input));
    };
  };
  if (c.layers > 1) {
    add("stack_per_layer_exchange", stack(false), Clock::host, Role::stack, "", {}, c.layers);
    add("stack_reused_split_sizes", stack(true), Clock::host, Role::stack, "", {}, c.layers);
  }
  if (c.graph)
    add_graph_components(
        layer, checks,
        [&](const std::string& name, const std::function<void(Stream)>& body, Clock clock) {
          const bool is_stack = name.rfind("stack_", 0) == 0;
          add(name, body, clock, is_stack ? Role::stack : Role::probe, "", {}, is_stack ? c.layers : 1);
        },
        x.data(), out.data(), c.layers > 1 ? std::function<void(Stream)>(stack(true)) : std::function<void(Stream)>());

  DenseRef dense;
  {
    dense.m = runner.time(dense_name, dense_body);
    if (progress) progress->step(dense_name);
    dense.size = g;
    dense.m.group = c.layout;
    dense.m.role = reports::Role::reference;
    dense.m.work.flops = gemm_flops(static_cast<double>(g), static_cast<double>(g), static_cast<double>(g));
  }

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
      for (const auto& [name, body] : rated) {
        ms.push_back(runner.time_interleaved(name, body, dense_name, dense_body));
        if (rp) rp->step(fmt::format("run {} {}", run + 1, name));
      }
      repeats.push_back(std::move(ms));
    }
    if (rp) rp->finish();
  }

  std::optional<AbResult> ab;
  const auto what_ifs = run_what_ifs(layer, x.data(), c, targets, comps, sampler.get());
  if (c.ab == "metadata") ab = run_ab(layer, x.data(), c, comps, what_ifs, sampler.get());
  std::vector<AbResult> drops;
  for (const auto& d : c.ab_drops) drops.push_back(run_drop_ab(layer, x.data(), c, d, what_ifs, sampler.get()));

  ProfileInputs in{c, p, layer.ops().describe(), checks, load, comps, dense, ab, what_ifs, telemetry_status, drops,
                   repeats};
  finish_report(ctx, runner, in);
  return 0;
}

}  // namespace layerbench::moe
