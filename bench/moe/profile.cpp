// layerbench-moe's flags, the stack of layers, and the choice of family for the one profile
// driver (bench/moe/driver.cpp).
#include "bench/moe/profile.hpp"
#include "common/json_text.hpp"


#include "collectives/error.hpp"
#include "common/cli.hpp"
#include "bench/moe/advise.hpp"
#include "bench/moe/driver.hpp"
#include "bench/moe/model_flags.hpp"

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
               "whose neighbour ran another variant: at least this many, and for as long as that neighbour ran (a "
               "power-capped GPU carries its clocks from one stack into the next); 0 = off",
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
                 "@begin edges), replicate (run the component --what-if-copies times per instance), delay (inject idle)");
  app.add_option("--what-if-copies", c.what_if_copies,
                 "replicate: copies per instance, one level each (0 only for components that can be skipped); "
                 "wider counts (0,1,4,8) price a small component in fewer rounds")
      ->delimiter(',');
  cli::add_real(app, "--what-if-seconds", c.what_if_seconds, "replicate: cap on the stacks' time per component (s)",
                num::RealRange::positive(86400));
  cli::add_real(app, "--what-if-precision", c.what_if_precision,
                "replicate: stop once the slope's 95% interval is within this fraction of it (or --what-if-seconds)",
                num::RealRange::positive(1));
  cli::add_real(app, "--what-if-floor-ms", c.what_if_floor_ms,
                "replicate: ... or within this many ms, for components under 0.2 ms (0: the relative rule alone)",
                num::RealRange::non_negative(1000));
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

void* run_stack(const LayerFn& one, void* a, void* b, int layers, Stream s, StackInput input) {
  for (int l = 0; l < layers; ++l) {
    one(a, b, s);
    if (input == StackInput::chained) std::swap(a, b);
  }
  return input == StackInput::chained ? a : b;
}

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
  // One driver; the family is the layer's component table and the little it adds.
  const auto family = c.model.block == Block::standard ? make_standard_family(c, ctx.world)
                                                       : make_magi2_family(c, ctx.world);
  return run_profile(ctx, c, *family);
}

}  // namespace layerbench::moe
