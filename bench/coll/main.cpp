// layerbench-coll: nccl-tests-style collective sweeps on the NCCL (device) or MPI (host) backend.
// Rows are printed as each size finishes; --json/--csv are rewritten after every step (marked
// incomplete until the sweep ends), so an interrupted sweep keeps what it measured.
#include "common/cli/progress.hpp"
#include "bench/coll/sweep.hpp"
#include "harness/main.hpp"
#include "collectives/error.hpp"
#include "collectives/grid.hpp"
#include "reports/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

using namespace layerbench;

namespace {

reports::Table sweep_table(const std::vector<reports::Measurement>& results) {
  // Every figure from the declared work (reports::rates_of), in adaptive units.
  using reports::Align;
  reports::Table t;
  t.headers = {"op", "bytes", "in place", "time", "algbw", "busbw", "#wrong"};
  t.align = {Align::left, Align::right, Align::left, Align::right, Align::right, Align::right, Align::right};
  auto rate = [](double v) { return std::isfinite(v) ? reports::fmt_quantity(v, reports::Unit::bytes_per_s) : "—"; };
  for (const auto& m : results) {
    const auto r = reports::rates_of(m);
    t.add_row({m.name, fmt::format("{}", m.params.value("bytes", 0ull)), m.params.value("in_place", false) ? "yes" : "no",
               reports::fmt_time(r.median_ms), rate(r.algbw_bytes_per_s), rate(r.busbw_bytes_per_s),
               fmt::format("{}", m.metrics.value("wrong", 0.0))});
  }
  return t;
}

int run(harness::Context& ctx, const coll::Config& c) {
  const auto plan = coll::make_plan(c);
  if (plan.fault_rank >= ctx.world.size())
    throw UsageError(fmt::format("--inject-fault {}: rank {} does not exist ({} ranks)", c.inject_fault, plan.fault_rank,
                                 ctx.world.size()));
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
  const nlohmann::json config = {{"ops", c.ops}, {"dtype", c.dtype}, {"min_bytes", c.min_bytes},
                                 {"max_bytes", c.max_bytes}, {"step_factor", c.step_factor},
                                 {"place", c.places}, {"graph", c.graph}, {"grid", c.grid}, {"group", c.group},
                                 {"group_size", comm->size()}, {"imbalance", c.imbalance},
                                 {"matrix", c.matrix}, {"link_gbps", c.link_gbps},
                                 {"comm_alloc", c.comm_alloc}};
  // Collective (gathers provenance): made once, filled in as the sweep goes.
  auto doc = harness::make_document(ctx, runner, config, {}, {{"total_wrong", 0}});
  const auto steps = coll::sweep_steps(plan);
  const coll::TablePrinter table(c);
  std::optional<cli::Progress> progress;
  std::FILE* text = harness::text_stream(c.common);
  const bool list_only = c.common.gbench.list_tests;  // names only: nothing is checked or timed
  if (ctx.is_root() && !list_only) {
    std::fprintf(text, "# layerbench-coll: backend %s, %d ranks, group %s (%d ranks), %d warm-up + %d timed iterations\n",
                std::string(to_string(ctx.world.backend())).c_str(), ctx.world.size(), c.group.c_str(), comm->size(),
                runner.options().warmup, runner.options().iterations);
    std::fputs(table.header().c_str(), text);
    std::fflush(text);
    // The ETA weighs each step by its bytes (plus a latency floor); the table rows are the
    // per-step lines, so the status line shows on a terminal only.
    std::vector<double> weights;
    for (const auto& s : steps) weights.push_back(static_cast<double>(s.size) + 65536.0);
    progress.emplace("sweep", steps.size(), weights, cli::Progress::Lines::when_tty_only);
  }
  std::size_t done = 0;
  const auto res = coll::run_sweep(c, plan, ctx.world, *comm, runner,
                                   [&](const coll::SweepResult& so_far, std::span<const reports::Measurement> step) {
                                     ++done;
                                     if (!ctx.is_root() || list_only) return;
                                     progress->finish();
                                     std::fputs(table.rows(step).c_str(), text);
                                     std::fflush(text);
                                     doc["total_wrong"] = so_far.total_wrong;
                                     harness::write_partial_outputs(ctx, c.common, doc, so_far.results, done,
                                                                    steps.size());
                                     const auto& s = steps[std::min(done, steps.size()) - 1];
                                     progress->step(fmt::format("{} {} B", coll::to_string(s.op), s.size));
                                   });
  if (list_only) {
    harness::write_outputs(ctx, c.common, doc, res.unselected, "");
    return 0;
  }
  if (ctx.is_root()) {
    progress->finish();
    std::fputs(table.footer(res).c_str(), text);
    std::fflush(text);
  }
  // Sizes too small for the group (less than one element per rank) are skipped; an op with
  // nothing left measured nothing, which is a usage error, not "0 OK". An op whose cases
  // --benchmark_filter left out had sizes.
  auto has_op = [](const std::vector<reports::Measurement>& ms, coll::Op op) {
    return std::any_of(ms.begin(), ms.end(), [&](const auto& m) {
      return m.params.value("op", std::string{}) == coll::to_string(op) || m.name == coll::to_string(op);
    });
  };
  if (res.results.empty() && !res.unselected.empty())
    throw UsageError(fmt::format("--benchmark_filter={}: selects none of the {} measurements of this sweep "
                                 "(list their names with --benchmark_list_tests=true)",
                                 c.common.gbench.filter, res.unselected.size()));
  for (const auto op : plan.op_list) {
    const bool any = has_op(res.results, op) || has_op(res.unselected, op);
    if (!any)
      throw UsageError(fmt::format("{}: no size in -b {} .. -e {} holds one {} element per rank at {} ranks; raise -e",
                                   coll::to_string(op), c.min_bytes, c.max_bytes, c.dtype, comm->size()));
  }
  auto arr = nlohmann::json::array();
  for (const auto& m : res.results) arr.push_back(reports::to_json(m));
  doc["results"] = arr;
  doc["total_wrong"] = res.total_wrong;
  harness::write_outputs(ctx, c.common, doc, res.results, reports::to_markdown(sweep_table(res.results)));
  if (res.total_wrong) {
    if (ctx.is_root())
      std::fprintf(stderr, "layerbench-coll: %llu wrong elements: data check FAILED\n",
                   static_cast<unsigned long long>(res.total_wrong));
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return harness::mpi_main<coll::Config>(
      argc, argv,
      {coll::kBinary, "Collective sweeps at nccl-tests fidelity: per-iteration rank-max times, algbw/busbw, "
                          "data checks, in- and out-of-place", /*selects_before_timing=*/true,
       "EXAMPLES:\n"
       "  mpirun -np 2 layerbench-coll --backend host -b 8 -e 1M -f 2\n"
       "  mpirun -np 8 layerbench-coll -b 8 -e 1G -f 2 --ops all_gather --json coll.json\n"},
      [](CLI::App& app, coll::Config& c) { coll::add_flags(app, c); },
      [](const coll::Config& c) { (void)coll::make_plan(c); },
      run);
}
