// layerbench-attn: Ulysses, AllGather-KV and the composed 2D grid, timed component by component.
#include "bench/attn/bench.hpp"

int main(int argc, char** argv) {
  using layerbench::attention::BenchConfig;
  return layerbench::harness::mpi_main<BenchConfig>(
      argc, argv,
      {"layerbench-attn", "sequence-parallel attention topologies (Ulysses x AllGather-KV)"},
      layerbench::attention::add_flags, layerbench::attention::validate, layerbench::attention::run);
}
