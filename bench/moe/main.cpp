// layerbench-moe: the MAGI-2 multi-head MoE layer, component by component.
#include "bench/harness/main.hpp"
#include "bench/moe/profile.hpp"

int main(int argc, char** argv) {
  using layerbench::moe::RunConfig;
  return layerbench::harness::mpi_main<RunConfig>(
      argc, argv,
      {"layerbench-moe", "MAGI-2 multi-head MoE layer: component profile, metadata reuse, overlap probe"},
      [](CLI::App& app, RunConfig& c) { layerbench::moe::add_flags(app, c); },
      [](const RunConfig& c) { layerbench::moe::validate(c); },
      [](layerbench::harness::Context& ctx, const RunConfig& c) { return layerbench::moe::run(ctx, c); });
}
