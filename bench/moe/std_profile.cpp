// Component profile of the standard expert-parallel MoE block (any model but MAGI-2): checked
// against the CPU oracle first, then every component of the block's own table timed on its own
// (rank-max samples), the whole block as the total, and a dense GEMM reference. The header
// names the model, where it came from, and the kernel path of each component.
#include "bench/moe/std_profile.hpp"
#include "common/json_text.hpp"

#include "collectives/error.hpp"
#include "moe/init.hpp"
#include "moe/standard/std_block.hpp"
#include "moe/standard/std_reference.hpp"
#include "reports/profile.hpp"
#include "reports/table.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

namespace layerbench::moe {

namespace {

// Expert load of the last dispatch over every rank: rows per local expert.
nlohmann::json expert_load(StdBlock& b) {
  const auto& rows = b.local_expert_rows();
  double mx = 0, tot = 0, empty = 0;
  for (auto v : rows) {
    mx = std::max(mx, double(v));
    tot += double(v);
    empty += v == 0 ? 1 : 0;
  }
  double sums[3] = {tot, empty, double(rows.size())};
  b.ep().control_sum(sums);
  double most = mx;
  b.ep().control_max(std::span<double>(&most, 1));
  const double mean = sums[2] > 0 ? sums[0] / sums[2] : 0;
  return {{"experts", sums[2]}, {"assignments", sums[0]}, {"mean_per_expert", mean},
          {"max_per_expert", most}, {"max_over_mean", mean > 0 ? most / mean : 0},
          {"experts_without_tokens", sums[1]}};
}

nlohmann::json run_checks(StdBlock& b, const void* x, const void* out, const RunConfig& c) {
  if (c.skip_check) return {{"skipped", true}};
  const bool gpu = b.act_bytes() == 2;
  const int samples = gpu ? static_cast<int>(std::max<std::int64_t>(2, 16 / c.model.topk)) : 8;
  const StdCheck ck = check_std_block(b, x, out, c.common.seed, samples);
  double finite = 1;
  const auto n = static_cast<std::size_t>(b.plan().tokens * c.model.hidden);
  if (gpu) {
    for (auto v : b.ep().device().download<std::uint16_t>(out, n)) finite = (v & 0x7f80u) == 0x7f80u ? 0 : finite;
  } else {
    for (auto v : b.ep().device().download<float>(out, n)) finite = std::isfinite(v) ? finite : 0;
  }
  double flags[2] = {ck.ok() ? 0.0 : 1.0, 1.0 - finite};
  b.ep().control_max(flags);
  nlohmann::json j = {{"oracle", ck.to_json()}, {"oracle_ok_all_ranks", flags[0] == 0}, {"output_finite", flags[1] == 0}};
  if (flags[0] != 0 || flags[1] != 0) throw Error("standard MoE block check failed (this or another rank): " + json_text(j));
  return j;
}

// A dense bf16 (fp32 on host) GEMM measured in the same run: the rates' yardstick.
reports::Measurement dense_reference(const harness::Runner& runner, StdBlock& block, const RunConfig& c,
                                     const std::string& group) {
  auto& dev = block.ep().device();
  const Stream s = dev.compute_stream();
  const std::int64_t g = c.dense_gemm_size > 0 ? c.dense_gemm_size : (block.ep().backend() == Backend::cuda ? 8192 : 128);
  const auto gb = static_cast<std::size_t>(g * g) * block.act_bytes();
  Buffer A = dev.alloc(gb), B = dev.alloc(gb), C = dev.alloc(gb);
  DenseOps& o = block.ops().dense();
  o.fill(A.data(), o.act(), {.seed = c.common.seed, .tensor = kDenseA, .scale = 1.0f, .rows = g, .cols = g, .full_cols = g, .ld = g}, s);
  o.fill(B.data(), o.act(), {.seed = c.common.seed, .tensor = kDenseB, .scale = 1.0f, .rows = g, .cols = g, .full_cols = g, .ld = g}, s);
  dev.synchronize(s);
  auto m = runner.time("dense_gemm_reference", [&](Stream st) {
    o.linear(A.data(), B.data(), C.data(), {.m = g, .n = g, .k = g, .lda = g, .ldw = g, .ldc = g}, false, st);
  });
  m.group = group;
  m.role = reports::Role::reference;
  m.work.flops = 2.0 * double(g) * double(g) * double(g);
  m.params = {{"m", g}, {"n", g}, {"k", g}};
  return m;
}

}  // namespace

int run_standard(harness::Context& ctx, const RunConfig& c) {
  Communicator& world = ctx.world;
  auto& dev = world.device();
  const int P = world.size();
  if (c.ep > 0 && c.ep != P)
    throw UsageError(fmt::format("--ep {}: the standard block shards the experts over every rank; run it on {} ranks "
                                 "(this run has {})", c.ep, c.ep, P));
  if (!c.split_sizes.empty() && static_cast<int>(c.split_sizes.size()) != P)
    throw UsageError(fmt::format("--split-sizes has {} entries but the world has {} ranks", c.split_sizes.size(), P));
  const auto splits = c.split_sizes.empty() ? std::vector<std::int64_t>(static_cast<std::size_t>(P), c.tokens) : c.split_sizes;
  const StdPlan plan = make_std_plan(c.model, world.rank(), P, splits);
  if (world.backend() == Backend::cuda && c.model.activation.kind == Activation::gelu_tanh_glu)
    throw UsageError(fmt::format("activation gelu_tanh_glu (from {}): the CUDA expert kernels run silu-glu and "
                                 "swiglu-clamped only; use --backend host, or --activation silu-glu to time the "
                                 "same GEMM shapes", c.model.sources.count("activation") ? c.model.sources.at("activation") : "the model"));
  auto ops = world.backend() == Backend::cuda ? make_cuda_std_ops(dev) : make_host_std_ops();
  if (!c.expert_table.empty()) load_expert_table(*ops, c.expert_table);
  StdBlock block(c.model, plan, world, std::move(ops), c.common.seed);
  const Stream s = dev.compute_stream();
  Buffer x = block.make_activation(), out = block.make_activation();
  block.fill_input(x.data(), c.common.seed, s);
  block.forward(x.data(), out.data(), s);
  dev.synchronize(s);
  nlohmann::json checks = run_checks(block, x.data(), out.data(), c);
  const nlohmann::json load = expert_load(block);

  harness::Runner runner(world, harness::timing_from(c.common));
  std::vector<reports::Measurement> results;
  nlohmann::json paths = nlohmann::json::object();
  for (const auto& comp : block.components()) {
    const auto body = comp.role == reports::Role::total
                          ? std::function<void(Stream)>([&](Stream st) { block.forward(x.data(), out.data(), st); })
                          : std::function<void(Stream)>([&, name = comp.name](Stream st) { block.run_component(name, st); });
    reports::Measurement m = runner.time(comp.name, body, comp.host_clock ? harness::Clock::host : harness::Clock::device);
    m.group = "ep" + std::to_string(P);
    m.role = comp.role;
    m.parent = comp.parent;
    m.work = comp.work;
    m.params = {{"ep", P}, {"tokens_local", plan.tokens}, {"kernel_path", comp.kernel_path}};
    if (!comp.kernel_path.empty()) paths[comp.name] = comp.kernel_path;
    results.push_back(std::move(m));
  }
  results.push_back(dense_reference(runner, block, c, "ep" + std::to_string(P)));
  const auto comp = reports::composition(results, "ep" + std::to_string(P), "Component profile");
  const Model& md = c.model;
  std::string text = fmt::format("## layerbench-moe: {} — standard expert-parallel block, EP {}, {} tokens/rank "
                                 "(global {}), {} local experts\n\n",
                                 md.name, P, plan.tokens, plan.global_tokens, plan.experts_local);
  text += fmt::format("- model: {}\n- model source: {}\n", summary(md), md.origin);
  if (!md.inference.empty()) text += "- " + md.inference + "\n";
  for (const auto& line : not_from_config_lines(md)) text += "- not read from the config: " + line + "\n";
  for (const auto& n : md.notes) text += "- note: " + n + "\n";
  text += "- kernel path per component:\n";
  for (auto it = paths.begin(); it != paths.end(); ++it) text += fmt::format("  - {}: {}\n", it.key(), it.value().get<std::string>());
  text += fmt::format("\n{} warmup + {} timed iterations, rank-max per iteration; every part timed on its own.\n\n",
                      runner.options().warmup, runner.options().iterations);
  text += reports::to_markdown(comp.table) + "\n";
  for (const auto& w : comp.warnings) text += "- Warning: " + w + "\n";
  text += fmt::format("- expert load: max/mean {:.3g}, experts with no token {}\n", load.value("max_over_mean", 0.0),
                      load.value("experts_without_tokens", 0.0));
  text += "- checks: " + json_text(checks) + "\n";
  nlohmann::json config = {{"model", to_json(md)}, {"tokens", c.tokens}, {"split_sizes", splits}, {"ep", P},
                           {"block", "standard"}, {"seed", c.common.seed}};
  nlohmann::json extra = {{"model", to_json(md)}, {"kernel_paths", paths}, {"checks", checks}, {"expert_load", load},
                          {"warnings", comp.warnings}, {"world_size", P}, {"tokens_per_rank", plan.tokens}};
  const auto doc = harness::make_document(ctx, runner, config, results, extra);
  if (ctx.is_root()) {
    std::fputs(text.c_str(), harness::text_stream(c.common));
    std::fflush(harness::text_stream(c.common));
  }
  harness::write_outputs(ctx, c.common, doc, results, text);
  return 0;
}

}  // namespace layerbench::moe
