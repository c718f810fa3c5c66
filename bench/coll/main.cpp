// layerbench-coll: nccl-tests-style collective sweeps on the NCCL (device) or MPI (host) backend.
#include "bench/coll/sweep.hpp"
#include "bench/harness/main.hpp"
#include "collectives/error.hpp"
#include "collectives/grid.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

using namespace layerbench;

int main(int argc, char** argv) {
  return harness::mpi_main<coll::Config>(
      argc, argv,
      {"layerbench-coll", "Collective sweeps at nccl-tests fidelity: per-iteration rank-max times, algbw/busbw, "
                          "data checks, in- and out-of-place"},
      [](CLI::App& app, coll::Config& c) { coll::add_flags(app, c); },
      [](const coll::Config& c) { (void)coll::make_plan(c); },
      [](harness::Context& ctx, const coll::Config& c) -> int {
        const auto plan = coll::make_plan(c);
        if (plan.fault_rank >= ctx.world.size())
          throw UsageError(fmt::format("--inject-fault {}: rank {} does not exist ({} ranks)", c.inject_fault,
                                       plan.fault_rank, ctx.world.size()));
        harness::Runner runner(ctx.world, harness::timing_from(c.common));
        Communicator* comm = &ctx.world;
        GridComms grid;
        if (plan.grid_u > 0) {
          try {
            grid = make_grid(ctx.world, plan.grid_u, plan.grid_a);
          } catch (const std::invalid_argument& e) {
            throw UsageError(std::string("--grid: ") + e.what());
          }
          if (c.group == "ulysses") comm = grid.inner.get();
          if (c.group == "allgather") comm = grid.outer.get();
        }
        if (ctx.is_root())
          std::printf("# layerbench-coll: backend %s, %d ranks, group %s (%d ranks), %d warm-up + %d timed iterations\n",
                      std::string(to_string(ctx.world.backend())).c_str(), ctx.world.size(), c.group.c_str(),
                      comm->size(), runner.options().warmup, runner.options().iterations);
        const auto res = coll::run_sweep(c, plan, ctx.world, *comm, runner);
        // Sizes too small for the group (less than one element per rank) are skipped; an op
        // with nothing left measured nothing, which is a usage error, not "0 OK".
        for (const auto op : plan.op_list) {
          const bool any = std::any_of(res.results.begin(), res.results.end(), [&](const auto& m) {
            return m.params.value("op", std::string{}) == coll::to_string(op) || m.name == coll::to_string(op);
          });
          if (!any)
            throw UsageError(fmt::format("{}: no size in -b {} .. -e {} holds one {} element per rank at {} ranks; raise -e",
                                         coll::to_string(op), c.min_bytes, c.max_bytes, c.dtype, comm->size()));
        }
        if (ctx.is_root()) std::fputs(coll::format_table(c, res).c_str(), stdout);
        nlohmann::json config = {{"ops", c.ops}, {"dtype", c.dtype}, {"min_bytes", c.min_bytes},
                                 {"max_bytes", c.max_bytes}, {"step_factor", c.step_factor},
                                 {"place", c.places}, {"graph", c.graph}, {"grid", c.grid}, {"group", c.group},
                                 {"group_size", comm->size()}, {"imbalance", c.imbalance},
                                 {"matrix", c.matrix}, {"link_gbps", c.link_gbps},
                                 {"comm_alloc", c.comm_alloc}};
        const auto doc = harness::make_document(ctx, runner, config, res.results,
                                                {{"total_wrong", res.total_wrong}});
        std::string md = "| op | bytes | in place | time (us) | busbw (GB/s) | #wrong |\n|---|---:|---|---:|---:|---:|\n";
        for (const auto& m : res.results)
          md += fmt::format("| {} | {} | {} | {:.2f} | {:.2f} | {} |\n", m.name, m.params.value("bytes", 0ull),
                            m.params.value("in_place", false) ? "yes" : "no", m.metrics.value("time_us", 0.0),
                            m.metrics.value("busbw_gbps", 0.0), m.metrics.value("wrong", 0.0));
        harness::write_outputs(ctx, c.common, doc, res.results, md);
        if (res.total_wrong) {
          if (ctx.is_root()) std::fprintf(stderr, "layerbench-coll: %llu wrong elements: data check FAILED\n",
                                          static_cast<unsigned long long>(res.total_wrong));
          return 1;
        }
        return 0;
      });
}
