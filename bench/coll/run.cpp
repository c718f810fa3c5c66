// Validation and timing of every (op, size, place). Data are small integers, exact in bf16, fp32
// and int64 even after summing over ranks, so a check is an exact comparison (#wrong), as in
// nccl-tests' verifiable data. Each value depends on the sender rank and the element index, so
// misrouted chunks are caught too.
#include "bench/coll/sweep.hpp"

#include "bench/harness/gbench.hpp"
#include "collectives/error.hpp"

#include <fmt/format.h>
#include "stats/summary.hpp"

#include <algorithm>
#include <cstring>
#include <functional>

namespace layerbench::coll {
namespace {

// Values in [-r, r] with r = min(7, 256 / ranks): a sum over all ranks stays within bf16's
// exact integer range (|x| <= 256), so even large jobs check exactly.
std::int64_t pattern(int rank, std::size_t i, std::uint64_t seed, int ranks) {
  const std::uint64_t h = (static_cast<std::uint64_t>(i) * 2654435761ull) ^ (static_cast<std::uint64_t>(rank + 1) * 40503ull) ^ seed;
  const std::int64_t r = std::max<std::int64_t>(1, std::min<std::int64_t>(7, 256 / std::max(ranks, 1)));
  return static_cast<std::int64_t>((h >> 5) % static_cast<std::uint64_t>(2 * r + 1)) - r;
}

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

// What one (op, size, place) case needs: buffers, the call, and the expected output.
struct Case {
  std::uint64_t bytes = 0;      // nccl-tests' size convention for the op
  std::size_t count = 0;        // elements per rank (the count column)
  std::size_t send_elems = 0, recv_elems = 0;
  std::vector<std::size_t> sc, sd, rc, rd;  // all_to_allv counts / displacements
  bool in_place = false;
  std::size_t in_place_offset = 0;  // where the input sits inside the output buffer, in place
  std::function<void(const Buffer& send, const Buffer& recv, Stream s)> call;
  std::function<std::int64_t(std::size_t i)> send_value;  // this rank's input
  std::function<std::int64_t(std::size_t i)> expected;    // this rank's output
  void* send_ptr(const Buffer& send, const Buffer& recv) const { return in_place ? recv.data() : send.data(); }
};

std::size_t elem_offset(std::size_t elems, DType t) { return elems * dtype_size(t); }

// Returns nullopt when the op has no such place (e.g. in-place all_to_all: N/A like nccl-tests).
std::optional<Case> make_case(Op op, std::uint64_t size, bool in_place, const Plan& plan, double imbalance,
                              Communicator& comm, std::uint64_t seed) {
  const int n = comm.size(), me = comm.rank();
  const auto nn = static_cast<std::size_t>(n);
  const DType t = plan.type;
  const std::size_t es = dtype_size(t);
  Case c;
  c.in_place = in_place;
  auto val = [seed, n](int r, std::size_t i) { return pattern(r, i, seed, n); };
  switch (op) {
    case Op::all_gather: {
      c.count = size / (nn * es);
      if (!c.count) return std::nullopt;
      c.bytes = c.count * nn * es;
      c.send_elems = c.count;
      c.recv_elems = c.count * nn;
      const std::size_t cnt = c.count;
      c.send_value = [=](std::size_t i) { return val(me, i); };
      c.expected = [=](std::size_t i) { return val(static_cast<int>(i / cnt), i % cnt); };
      c.in_place_offset = static_cast<std::size_t>(me) * cnt;
      c.call = [&comm, cnt, t, in_place, me, es](const Buffer& s, const Buffer& r, Stream st) {
        const void* src = in_place ? static_cast<const char*>(r.data()) + static_cast<std::size_t>(me) * cnt * es : s.data();
        comm.all_gather(src, r.data(), cnt, t, st);
      };
      return c;
    }
    case Op::all_to_all:
    case Op::all_to_allv: {
      if (in_place) return std::nullopt;
      // counts[p][q]: elements rank p sends to rank q.
      std::vector<std::vector<std::size_t>> counts(nn, std::vector<std::size_t>(nn));
      if (op == Op::all_to_allv && !plan.matrix_bytes.empty()) {
        if (plan.matrix_bytes.size() != nn)
          throw UsageError(fmt::format("--matrix is {0}x{0} but the group has {1} ranks", plan.matrix_bytes.size(), n));
        for (std::size_t p = 0; p < nn; ++p)
          for (std::size_t q = 0; q < nn; ++q) {
            if (plan.matrix_bytes[p][q] % es)
              throw UsageError(fmt::format("--matrix entry ({},{}) = {} bytes is not a multiple of the {}-byte {} element",
                                           p + 1, q + 1, plan.matrix_bytes[p][q], es, to_string(t)));
            counts[p][q] = plan.matrix_bytes[p][q] / es;
          }
      } else {
        const std::size_t base = size / (nn * es);
        if (!base) return std::nullopt;
        for (std::size_t p = 0; p < nn; ++p)
          for (std::size_t q = 0; q < nn; ++q)
            counts[p][q] = (op == Op::all_to_allv && p == 0) ? static_cast<std::size_t>(base * imbalance) : base;
      }
      // nccl-tests alltoallv convention: the largest per-rank send or receive bytes.
      std::size_t largest = 0;
      for (std::size_t p = 0; p < nn; ++p) {
        std::size_t snd = 0, rcv = 0;
        for (std::size_t q = 0; q < nn; ++q) {
          snd += counts[p][q];
          rcv += counts[q][p];
        }
        largest = std::max({largest, snd, rcv});
      }
      c.bytes = largest * es;
      const auto m = static_cast<std::size_t>(me);
      c.sc.resize(nn), c.sd.resize(nn), c.rc.resize(nn), c.rd.resize(nn);
      std::vector<std::vector<std::size_t>> send_displs(nn, std::vector<std::size_t>(nn));
      for (std::size_t p = 0; p < nn; ++p)
        for (std::size_t q = 1; q < nn; ++q) send_displs[p][q] = send_displs[p][q - 1] + counts[p][q - 1];
      for (std::size_t q = 0; q < nn; ++q) {
        c.sc[q] = counts[m][q];
        c.sd[q] = send_displs[m][q];
        c.rc[q] = counts[q][m];
        c.rd[q] = q ? c.rd[q - 1] + c.rc[q - 1] : 0;
      }
      c.send_elems = c.sd[nn - 1] + c.sc[nn - 1];
      c.recv_elems = c.rd[nn - 1] + c.rc[nn - 1];
      c.count = c.send_elems;
      // Skip only when nobody moves anything: a rank with nothing to send or receive must still
      // take part in the collective (and in the harness's own collectives) with its peers.
      if (largest == 0) return std::nullopt;
      c.send_value = [=](std::size_t i) { return val(me, i); };
      const auto rd = c.rd, rc = c.rc;
      c.expected = [=](std::size_t i) {
        std::size_t p = 0;
        while (p + 1 < nn && i >= rd[p + 1]) ++p;
        return val(static_cast<int>(p), send_displs[p][m] + (i - rd[p]));
      };
      c.call = [&comm, t, sc = c.sc, sd = c.sd, rc2 = c.rc, rd2 = c.rd](const Buffer& s, const Buffer& r, Stream st) {
        comm.all_to_allv(s.data(), sc, sd, r.data(), rc2, rd2, t, st);
      };
      return c;
    }
    case Op::all_reduce: {
      c.count = size / es;
      if (!c.count) return std::nullopt;
      c.bytes = c.count * es;
      c.send_elems = c.recv_elems = c.count;
      c.send_value = [=](std::size_t i) { return val(me, i); };
      c.expected = [=](std::size_t i) {
        std::int64_t s = 0;
        for (int r = 0; r < n; ++r) s += val(r, i);
        return s;
      };
      const std::size_t cnt = c.count;
      c.call = [&comm, cnt, t, in_place](const Buffer& s, const Buffer& r, Stream st) {
        comm.all_reduce(in_place ? r.data() : s.data(), r.data(), cnt, t, st);
      };
      return c;
    }
    case Op::reduce_scatter: {
      c.count = size / (nn * es);
      if (!c.count) return std::nullopt;
      c.bytes = c.count * nn * es;
      c.send_elems = c.count * nn;
      c.recv_elems = in_place ? c.count * nn : c.count;
      const std::size_t cnt = c.count;
      c.send_value = [=](std::size_t i) { return val(me, i); };
      // In place the result lands in this rank's block of the (full-size) buffer.
      const std::size_t off = in_place ? static_cast<std::size_t>(me) * cnt : 0;
      c.expected = [=](std::size_t i) -> std::int64_t {
        if (i < off || i >= off + cnt) return INT64_MIN;  // not checked
        std::int64_t s = 0;
        for (int r = 0; r < n; ++r) s += val(r, static_cast<std::size_t>(me) * cnt + (i - off));
        return s;
      };
      c.call = [&comm, cnt, t, in_place, me, es](const Buffer& s, const Buffer& r, Stream st) {
        if (in_place) {
          comm.reduce_scatter(r.data(), static_cast<char*>(r.data()) + static_cast<std::size_t>(me) * cnt * es, cnt, t, st);
        } else {
          comm.reduce_scatter(s.data(), r.data(), cnt, t, st);
        }
      };
      return c;
    }
    case Op::broadcast: {
      if (!in_place) return std::nullopt;  // the interface's broadcast is in place
      c.count = size / es;
      if (!c.count) return std::nullopt;
      c.bytes = c.count * es;
      c.send_elems = c.recv_elems = c.count;
      c.send_value = [=](std::size_t i) { return val(me, i); };
      c.expected = [=](std::size_t i) { return val(0, i); };
      const std::size_t cnt = c.count;
      c.call = [&comm, cnt, t](const Buffer&, const Buffer& r, Stream st) { comm.broadcast(r.data(), cnt, t, 0, st); };
      return c;
    }
    case Op::sendrecv: {
      if (in_place) return std::nullopt;
      c.count = size / es;
      if (!c.count) return std::nullopt;
      c.bytes = c.count * es;
      c.send_elems = c.recv_elems = c.count;
      const int dst = (me + 1) % n, src = (me + n - 1) % n;
      c.send_value = [=](std::size_t i) { return val(me, i); };
      c.expected = [=](std::size_t i) { return val(src, i); };
      const std::size_t cnt = c.count;
      c.call = [&comm, cnt, t, dst, src](const Buffer& s, const Buffer& r, Stream st) {
        comm.sendrecv(s.data(), dst, r.data(), src, cnt, t, st);
      };
      return c;
    }
    case Op::scalar_exchange: break;
  }
  return std::nullopt;
}

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
        auto c = make_case(op, size, in_place, plan, cfg.imbalance, comm, cfg.common.seed);
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
        const double algbw = static_cast<double>(c->bytes) / (med_ms * 1e-3) / 1e9;
        const double busbw = algbw * busbw_factor(op, n);
        const double agg_busbw = static_cast<double>(c->bytes) / (agg_ms * 1e-3) / 1e9 * busbw_factor(op, n);
        m.group = id.group;
        m.params = std::move(id.params);
        m.work = {0, static_cast<double>(c->bytes), busbw_factor(op, n)};
        m.metrics = {{"time_us", med_ms * 1e3}, {"algbw_gbps", algbw}, {"busbw_gbps", busbw},
                     {"agg_time_us", agg_ms * 1e3}, {"agg_busbw_gbps", agg_busbw}, {"wrong", wrong}};
        if (cfg.link_gbps > 0) m.metrics["pct_link"] = 100.0 * busbw / cfg.link_gbps;
        res.results.push_back(std::move(m));
      }
      step_done(first);
    }
  }
  return res;
}


}  // namespace layerbench::coll
