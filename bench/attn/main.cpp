// layerbench-attn: Ulysses, Ring, AllGather-KV and their grids, timed component by component.
#include "bench/attn/bench.hpp"

#include <algorithm>
#include <string>

namespace {

// Attention per rank, roughly: QK^T and PV over the whole sequence (text tokens included) for
// the rank's share of the heads, for every sequence length and topology timed.
double flops_per_iteration(const layerbench::attention::BenchConfig& c, int world) {
  const double topologies = 1.0 + static_cast<double>(std::count(c.topologies.begin(), c.topologies.end(), ','));
  double flops = 0;
  for (const long long s : c.seqs) {
    const double len = static_cast<double>(s + c.text_tokens);
    flops += 4.0 * static_cast<double>(c.batch) * len * len * c.heads * c.head_dim / world;
  }
  return flops * topologies;
}

}  // namespace

int main(int argc, char** argv) {
  using layerbench::attention::BenchConfig;
  return layerbench::harness::mpi_main<BenchConfig>(
      argc, argv,
      {"layerbench-attn", "sequence-parallel attention topologies (Ulysses, Ring, AllGather-KV and their grids)", false,
       "EXAMPLES:\n"
       "  mpirun -np 2 layerbench-attn --backend host --seqs 256 --heads 4 --head-dim 32\n"
       "  mpirun -np 2 layerbench-attn --json attn.json --markdown attn.md\n"},
      layerbench::attention::add_flags, layerbench::attention::validate,
      [](layerbench::harness::Context& ctx, const BenchConfig& c) {
        if (!c.advise && !c.list_models)  // the advisor times one rank's local work, not this estimate
          layerbench::harness::warn_if_gpu_sized(ctx, c.common, flops_per_iteration(c, ctx.world.size()),
                                                 "--seqs 256 --heads 4 --head-dim 32");
        return layerbench::attention::run(ctx, c);
      });
}
