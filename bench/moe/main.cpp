// layerbench-moe: an MoE layer component by component (MAGI-2's multi-head layer, or the standard
// expert-parallel block of any MoE model).
#include "harness/main.hpp"
#include "bench/moe/profile.hpp"
#include "bench/moe/driver.hpp"

namespace {

// One pass over the layer's GEMMs per rank, roughly: routed experts (gate/up + down, top-k
// copies of every token across the heads) and the shared MLPs; the profile times each component
// and the whole layer, so about three such passes per iteration.
double flops_per_iteration(const layerbench::moe::RunConfig& c) {
  const auto& g = c.geo;
  const double tokens = static_cast<double>(c.tokens);
  const double routed = tokens * static_cast<double>(g.topk * g.heads) * 6.0 * static_cast<double>(g.d_head() * g.intermediate);
  const double shared = tokens * 12.0 * static_cast<double>(g.hidden * g.intermediate);
  return 3.0 * (routed + shared);
}

}  // namespace

int main(int argc, char** argv) {
  using layerbench::moe::RunConfig;
  return layerbench::harness::mpi_main<RunConfig>(
      argc, argv,
      {"layerbench-moe",
       "MoE layers component by component: MAGI-2 multi-head layer (default) or any MoE model (--model, --hf-config) "
       "as the standard expert-parallel block",
       false,
       "EXAMPLES:\n"
       "  mpirun -np 2 layerbench-moe --backend host --tokens 64 --hidden 256 --moe-heads 4 --experts 8 --topk 2 "
       "--intermediate 64\n"
       "      a host run of seconds (the default geometry is GPU-sized)\n"
       "  mpirun -np 2 layerbench-moe --layout sp --json moe.json --markdown moe.md\n"
       "  layerbench-moe --model deepseek-v3 --describe\n"
       "  mpirun -np 2 layerbench-moe --ab metadata --pairs 30 --markdown -\n"},
      [](CLI::App& app, RunConfig& c) {
        layerbench::moe::add_flags(app, c);
        layerbench::moe::add_std_flags(app, c);
      },
      [](const RunConfig& c) { layerbench::moe::validate(c); },
      [](layerbench::harness::Context& ctx, const RunConfig& c) {
        if (!c.describe && !c.list_models && !c.advise)
          layerbench::harness::warn_if_gpu_sized(
            ctx, c.common, flops_per_iteration(c),
            "--tokens 64 --hidden 256 --moe-heads 4 --experts 8 --topk 2 --intermediate 64 (see "
            "bench/scripts/quickstart.sh)");
        return layerbench::moe::run(ctx, c);
      });
}
