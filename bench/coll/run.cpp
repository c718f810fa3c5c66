// Validation and timing of every (op, size, place), each case built by the op table (cases.hpp).
// Data are small integers, exact in bf16, fp32 and int64 even after summing over ranks, so a
// check is an exact comparison (#wrong), as in nccl-tests' verifiable data. Each value depends on
// the sender rank and the element index, so misrouted chunks are caught too.
#include "bench/coll/sweep.hpp"

#include "harness/gbench.hpp"
#include "collectives/error.hpp"

#include <fmt/format.h>
#include "stats/summary.hpp"
#include "bench/coll/cases.hpp"  // the op table

#include <algorithm>
#include <cstring>
#include <functional>

namespace layerbench::coll {
namespace {

// Host image of a typed buffer.
struct HostData {
  DType type;
  std::vector<std::byte> bytes;
  HostData(DType t, std::size_t n) : type(t), bytes(n * dtype_size(t)) {}
  std::size_t size() const { return bytes.size() / dtype_size(type); }
  void set(std::size_t i, std::int64_t v) {
    switch (type) {
      case DType::bf16: {
        const auto b = float_to_bf16_bits(static_cast<float>(v));
        std::memcpy(&bytes[i * 2], &b, 2);
        break;
      }
      case DType::fp32: {
        const auto f = static_cast<float>(v);
        std::memcpy(&bytes[i * 4], &f, 4);
        break;
      }
      case DType::int64: std::memcpy(&bytes[i * 8], &v, 8); break;
    }
  }
  double get(std::size_t i) const {
    switch (type) {
      case DType::bf16: {
        std::uint16_t b;
        std::memcpy(&b, &bytes[i * 2], 2);
        return bf16_bits_to_float(b);
      }
      case DType::fp32: {
        float f;
        std::memcpy(&f, &bytes[i * 4], 4);
        return f;
      }
      case DType::int64: {
        std::int64_t v;
        std::memcpy(&v, &bytes[i * 8], 8);
        return static_cast<double>(v);
      }
    }
    return 0;
  }
};

std::size_t elem_offset(std::size_t elems, DType t) { return elems * dtype_size(t); }

// Fill inputs, poison outputs, run once, compare exactly. Returns this rank's #wrong.
std::uint64_t check_case(const Case& c, Device& dev, const Buffer& send, const Buffer& recv, DType t,
                         bool inject_wrong) {
  const Stream s = dev.compute_stream();
  HostData in(t, c.send_elems);
  for (std::size_t i = 0; i < c.send_elems; ++i) in.set(i, c.send_value(i));
  // 0x7f.. is far outside the data range in every dtype: an unwritten element is caught.
  dev.memset(recv.data(), 0x7f, recv.bytes(), s);
  if (c.in_place) {
    dev.copy_from_host(static_cast<char*>(recv.data()) + elem_offset(c.in_place_offset, t), in.bytes.data(),
                       in.bytes.size(), s);
  } else {
    dev.copy_from_host(send.data(), in.bytes.data(), in.bytes.size(), s);
  }
  c.call(send, recv, s);
  HostData out(t, c.recv_elems);
  dev.copy_to_host(out.bytes.data(), recv.data(), out.bytes.size(), s);
  dev.synchronize(s);
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < c.recv_elems; ++i) {
    const std::int64_t e = c.expected(i);
    if (e == INT64_MIN) continue;
    if (out.get(i) != static_cast<double>(e)) ++wrong;
  }
  return wrong + (inject_wrong ? 1 : 0);
}

// Fresh non-zero data for timing (the check above left the buffers in a valid state already;
// this keeps in-place sums from starting at the poison value).
void refill(const Case& c, Device& dev, const Buffer& send, const Buffer& recv, DType t) {
  HostData in(t, c.send_elems);
  for (std::size_t i = 0; i < c.send_elems; ++i) in.set(i, c.send_value(i));
  const Stream s = dev.compute_stream();
  void* dst = c.in_place ? static_cast<char*>(recv.data()) + elem_offset(c.in_place_offset, t) : send.data();
  dev.copy_from_host(dst, in.bytes.data(), in.bytes.size(), s);
  dev.synchronize(s);
}

// Every measurement of layerbench-coll is a collective timed on its own, outside any layer, for
// the bandwidth derived from it: role `probe` (not `communication`, which is a part of a
// composed whole and takes a share of its parent; a sweep has no whole). Its work is
// nccl-tests' size for the op and nccl-tests' bus factor at the group's size, so algbw and busbw
// come from reports::rates_of.
void declare_work(reports::Measurement& m, const OpSpec& op, std::uint64_t bytes, int ranks) {
  m.role = reports::Role::probe;
  m.work.bytes = static_cast<double>(bytes);
  m.work.bus_factor = op.bus_factor(ranks);
}

// The rates of the nccl-tests-style aggregate (back-to-back ops, one mean time).
reports::Rates aggregate_rates(const reports::Measurement& m, double agg_ms) {
  reports::Measurement agg;
  agg.work = m.work;
  agg.samples_ms = {agg_ms};
  return reports::rates_of(agg);
}

}  // namespace

std::vector<Step> sweep_steps(const Plan& plan) {
  std::vector<Step> steps;
  for (const Op op : plan.op_list) {
    if (op == Op::scalar_exchange || (op == Op::all_to_allv && !plan.matrix_bytes.empty())) {
      steps.push_back({op, 0});
      continue;
    }
    for (const auto size : plan.sizes) steps.push_back({op, size});
  }
  return steps;
}

SweepResult run_sweep(const Config& cfg, const Plan& plan, Communicator& world, Communicator& comm,
                      const harness::Runner& runner, const StepCallback& on_step) {
  SweepResult res;
  Device& dev = comm.device();
  const int n = comm.size();
  // Counts come from rank 0, like the Runner's own.
  std::int64_t agg_n64 = cfg.aggregate_iterations > 0 ? cfg.aggregate_iterations : runner.options().iterations;
  world.control_broadcast(std::span<std::int64_t>(&agg_n64, 1));
  const int agg_n = static_cast<int>(agg_n64);
  const bool fault_here = plan.fault_rank == world.rank();
  bool fault_pending = fault_here;
  const std::string group_label = cfg.group == "world" ? "world" : fmt::format("{}:{}", cfg.group, cfg.grid);
  std::vector<bool> places;
  if (cfg.places != "in") places.push_back(false);
  if (cfg.places != "out") places.push_back(true);

  // --benchmark_filter selects what is measured, before any check or timing; with
  // --benchmark_list_tests nothing is (the names are listed).
  const auto& gb = cfg.common.gbench;
  auto selected = [&](const reports::Measurement& id) {
    if (!gb.list_tests && gb.selects(harness::gbench_run_name(kBinary, id, runner.options().iterations))) return true;
    res.unselected.push_back(id);
    return false;
  };
  auto step_done = [&](std::size_t first) {
    if (on_step) on_step(res, std::span<const reports::Measurement>(res.results).subspan(first));
  };
  for (const Op op : plan.op_list) {
    if (op == Op::scalar_exchange) {
      const std::size_t first = res.results.size();
      // The sequence-size exchange: host-synchronised (what `.item()` pays) and device-only.
      std::vector<reports::Measurement> ids;
      for (const bool host_sync : {true, false}) {
        reports::Measurement id;
        id.name = host_sync ? "scalar_exchange" : "scalar_exchange_device";
        id.group = group_label;
        id.params = {{"op", id.name}, {"bytes", 8 * n}, {"count", 1}, {"dtype", "int64"}, {"in_place", false},
                     {"host_sync", host_sync}};
        if (selected(id)) ids.push_back(std::move(id));
      }
      if (ids.empty()) {
        step_done(first);
        continue;
      }
      const std::int64_t mine = 1000 + comm.rank();
      const auto got = comm.scalar_exchange(mine);
      std::uint64_t wrong = fault_pending && plan.fault_kind == "wrong" ? 1 : 0;
      for (int r = 0; r < n; ++r) wrong += got[static_cast<std::size_t>(r)] != 1000 + r;
      if (fault_pending && plan.fault_kind == "throw") throw Error(fmt::format("[{}] injected fault", rank_tag()));
      fault_pending = false;
      double w = static_cast<double>(wrong);
      world.control_sum(std::span<double>(&w, 1));
      auto scratch = dev.alloc(sizeof(std::int64_t)), out = dev.alloc(sizeof(std::int64_t) * static_cast<std::size_t>(n));
      dev.copy_from_host(scratch.data(), &mine, sizeof mine, dev.compute_stream());
      for (auto& id : ids) {
        const bool host_sync = id.params["host_sync"].get<bool>();
        auto m = host_sync ? runner.time(id.name, [&](Stream) { comm.scalar_exchange(mine); }, harness::Clock::host)
                           : runner.time(id.name, [&](Stream s) { comm.scalar_exchange_device(scratch.data(), out.data(), s); });
        m.group = id.group;
        m.params = id.params;
        const double med = stats::summarize(m.samples_ms).median;
        m.metrics = {{"time_us", med * 1e3}, {"wrong", w}};
        declare_work(m, spec(Op::scalar_exchange), 8ull * static_cast<std::uint64_t>(n), n);
        res.results.push_back(std::move(m));
      }
      res.total_wrong += static_cast<std::uint64_t>(w);
      step_done(first);
      continue;
    }
    const std::vector<std::uint64_t> sizes =
        (op == Op::all_to_allv && !plan.matrix_bytes.empty()) ? std::vector<std::uint64_t>{0} : plan.sizes;
    for (const std::uint64_t size : sizes) {
      const std::size_t first = res.results.size();
      for (const bool in_place : places) {
        auto c = spec(op).build(CaseArgs{size, in_place, plan, cfg.imbalance, comm, cfg.common.seed});
        // Every rank derives the same cases (and names), so skipping is collective.
        if (!c) continue;
        reports::Measurement id;
        id.name = std::string(to_string(op));
        id.group = group_label;
        id.params = {{"op", id.name}, {"bytes", c->bytes}, {"count", c->count},
                     {"dtype", std::string(to_string(plan.type))}, {"in_place", in_place}, {"graph", cfg.graph}};
        if (!selected(id)) continue;
        auto alloc = [&](std::size_t elems) {
          const std::size_t bytes = elem_offset(std::max<std::size_t>(elems, 1), plan.type);
          return cfg.comm_alloc ? dev.alloc_comm(bytes) : dev.alloc(bytes);
        };
        auto send = alloc(c->send_elems);
        auto recv = alloc(c->recv_elems);
        if (fault_pending && plan.fault_kind == "throw") throw Error(fmt::format("[{}] injected fault", rank_tag()));
        double wrong = static_cast<double>(check_case(*c, dev, send, recv, plan.type, fault_pending));
        fault_pending = false;
        world.control_sum(std::span<double>(&wrong, 1));
        res.total_wrong += static_cast<std::uint64_t>(wrong);
        refill(*c, dev, send, recv, plan.type);

        std::unique_ptr<Graph> graph;
        if (cfg.graph) graph = dev.capture(dev.compute_stream(), [&](Stream s) { c->call(send, recv, s); });
        auto body = [&](Stream s) {
          if (graph) {
            graph->launch(s);
          } else {
            c->call(send, recv, s);
          }
        };
        auto m = runner.time(id.name, body);
        const double agg_ms = runner.time_aggregate_ms(body, agg_n);
        const double med_ms = stats::summarize(m.samples_ms).median;
        declare_work(m, spec(op), c->bytes, n);
        m.group = id.group;
        m.params = std::move(id.params);
        m.metrics = {{"time_us", med_ms * 1e3}, {"agg_time_us", agg_ms * 1e3},
                     {"agg_busbw_bytes_per_s", aggregate_rates(m, agg_ms).busbw_bytes_per_s}, {"wrong", wrong}};
        res.results.push_back(std::move(m));
      }
      step_done(first);
    }
  }
  return res;
}


}  // namespace layerbench::coll
