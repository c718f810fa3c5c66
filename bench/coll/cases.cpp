// The op table of layerbench-coll: one builder per collective (counts, nccl-tests' size, data,
// expected output, call) and nccl-tests' bus-bandwidth factor beside it.
#include "bench/coll/cases.hpp"

#include "collectives/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <climits>

namespace layerbench::coll {
namespace {

// Values in [-r, r] with r = min(7, 256 / ranks): a sum over all ranks stays within bf16's
// exact integer range (|x| <= 256), so even large jobs check exactly.
std::int64_t pattern(int rank, std::size_t i, std::uint64_t seed, int ranks) {
  const std::uint64_t h = (static_cast<std::uint64_t>(i) * 2654435761ull) ^ (static_cast<std::uint64_t>(rank + 1) * 40503ull) ^ seed;
  const std::int64_t r = std::max<std::int64_t>(1, std::min<std::int64_t>(7, 256 / std::max(ranks, 1)));
  return static_cast<std::int64_t>((h >> 5) % static_cast<std::uint64_t>(2 * r + 1)) - r;
}

// nccl-tests' factors (collectives.md §2).
double reduce_factor(int n) { return 2.0 * (n - 1) / n; }  // all_reduce
double gather_factor(int n) { return static_cast<double>(n - 1) / n; }  // gather, scatter, alltoall
double one_factor(int) { return 1.0; }  // broadcast, sendrecv

struct Common {
  int n, me;
  std::size_t nn, es;
  DType t;
  std::uint64_t seed;
  explicit Common(const CaseArgs& a)
      : n(a.comm.size()), me(a.comm.rank()), nn(static_cast<std::size_t>(n)), es(dtype_size(a.plan.type)),
        t(a.plan.type), seed(a.seed) {}
  std::function<std::int64_t(int, std::size_t)> val() const {
    return [seed = seed, n = n](int r, std::size_t i) { return pattern(r, i, seed, n); };
  }
};

// A case of `count` elements per rank with nccl-tests' size count x blocks x element (blocks:
// the ranks for gathers and scatters, 1 otherwise); nullopt when the size holds no element.
std::optional<Case> sized_case(const CaseArgs& a, const Common& k, std::size_t blocks) {
  Case c;
  c.in_place = a.in_place;
  c.count = a.size / (blocks * k.es);
  if (!c.count) return std::nullopt;
  c.bytes = c.count * blocks * k.es;
  return c;
}

std::optional<Case> all_gather_case(const CaseArgs& a) {
  const Common k(a);
  auto sc = sized_case(a, k, k.nn);
  if (!sc) return std::nullopt;
  Case& c = *sc;
  c.send_elems = c.count;
  c.recv_elems = c.count * k.nn;
  const std::size_t cnt = c.count;
  const auto val = k.val();
  const int me = k.me;
  c.send_value = [=](std::size_t i) { return val(me, i); };
  c.expected = [=](std::size_t i) { return val(static_cast<int>(i / cnt), i % cnt); };
  c.in_place_offset = static_cast<std::size_t>(me) * cnt;
  c.call = [&comm = a.comm, cnt, t = k.t, in_place = a.in_place, me, es = k.es](const Buffer& s, const Buffer& r, Stream st) {
    const void* src = in_place ? static_cast<const char*>(r.data()) + static_cast<std::size_t>(me) * cnt * es : s.data();
    comm.all_gather(src, r.data(), cnt, t, st);
  };
  return sc;
}

// counts[p][q]: elements rank p sends to rank q. all_to_allv: a --matrix, or rank 0 sending
// --imbalance times more; all_to_all: equal.
std::optional<std::vector<std::vector<std::size_t>>> exchange_counts(const CaseArgs& a, bool varying) {
  const Common k(a);
  std::vector<std::vector<std::size_t>> counts(k.nn, std::vector<std::size_t>(k.nn));
  const auto& mb = a.plan.matrix_bytes;
  if (varying && !mb.empty()) {
    if (mb.size() != k.nn)
      throw UsageError(fmt::format("--matrix is {0}x{0} but the group has {1} ranks", mb.size(), k.n));
    for (std::size_t p = 0; p < k.nn; ++p)
      for (std::size_t q = 0; q < k.nn; ++q) {
        if (mb[p][q] % k.es)
          throw UsageError(fmt::format("--matrix entry ({},{}) = {} bytes is not a multiple of the {}-byte {} element",
                                       p + 1, q + 1, mb[p][q], k.es, to_string(k.t)));
        counts[p][q] = mb[p][q] / k.es;
      }
    return counts;
  }
  const std::size_t base = a.size / (k.nn * k.es);
  if (!base) return std::nullopt;
  for (std::size_t p = 0; p < k.nn; ++p)
    for (std::size_t q = 0; q < k.nn; ++q)
      counts[p][q] = (varying && p == 0) ? static_cast<std::size_t>(static_cast<double>(base) * a.imbalance) : base;
  return counts;
}

std::optional<Case> exchange_case(const CaseArgs& a, bool varying) {
  if (a.in_place) return std::nullopt;
  const Common k(a);
  const auto counts_or = exchange_counts(a, varying);
  if (!counts_or) return std::nullopt;
  const auto& counts = *counts_or;
  const std::size_t nn = k.nn;
  Case c;
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
  c.bytes = largest * k.es;
  const auto m = static_cast<std::size_t>(k.me);
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
  const auto val = k.val();
  const int me = k.me;
  c.send_value = [=](std::size_t i) { return val(me, i); };
  c.expected = [=, rd = c.rd](std::size_t i) {
    std::size_t p = 0;
    while (p + 1 < nn && i >= rd[p + 1]) ++p;
    return val(static_cast<int>(p), send_displs[p][m] + (i - rd[p]));
  };
  c.call = [&comm = a.comm, t = k.t, sc = c.sc, sd = c.sd, rc = c.rc, rd = c.rd](const Buffer& s, const Buffer& r, Stream st) {
    comm.all_to_allv(s.data(), sc, sd, r.data(), rc, rd, t, st);
  };
  return c;
}
std::optional<Case> all_to_all_case(const CaseArgs& a) { return exchange_case(a, false); }
std::optional<Case> all_to_allv_case(const CaseArgs& a) { return exchange_case(a, true); }

std::optional<Case> all_reduce_case(const CaseArgs& a) {
  const Common k(a);
  auto sc = sized_case(a, k, 1);
  if (!sc) return std::nullopt;
  Case& c = *sc;
  c.send_elems = c.recv_elems = c.count;
  const auto val = k.val();
  const int me = k.me, n = k.n;
  c.send_value = [=](std::size_t i) { return val(me, i); };
  c.expected = [=](std::size_t i) {
    std::int64_t s = 0;
    for (int r = 0; r < n; ++r) s += val(r, i);
    return s;
  };
  c.call = [&comm = a.comm, cnt = c.count, t = k.t, in_place = a.in_place](const Buffer& s, const Buffer& r, Stream st) {
    comm.all_reduce(in_place ? r.data() : s.data(), r.data(), cnt, t, st);
  };
  return sc;
}

std::optional<Case> reduce_scatter_case(const CaseArgs& a) {
  const Common k(a);
  auto sc = sized_case(a, k, k.nn);
  if (!sc) return std::nullopt;
  Case& c = *sc;
  c.send_elems = c.count * k.nn;
  c.recv_elems = a.in_place ? c.count * k.nn : c.count;
  const std::size_t cnt = c.count;
  const auto val = k.val();
  const int me = k.me, n = k.n;
  c.send_value = [=](std::size_t i) { return val(me, i); };
  // In place the result lands in this rank's block of the (full-size) buffer.
  const std::size_t off = a.in_place ? static_cast<std::size_t>(me) * cnt : 0;
  c.expected = [=](std::size_t i) -> std::int64_t {
    if (i < off || i >= off + cnt) return INT64_MIN;  // not checked
    std::int64_t s = 0;
    for (int r = 0; r < n; ++r) s += val(r, static_cast<std::size_t>(me) * cnt + (i - off));
    return s;
  };
  c.call = [&comm = a.comm, cnt, t = k.t, in_place = a.in_place, me, es = k.es](const Buffer& s, const Buffer& r, Stream st) {
    if (in_place) {
      comm.reduce_scatter(r.data(), static_cast<char*>(r.data()) + static_cast<std::size_t>(me) * cnt * es, cnt, t, st);
    } else {
      comm.reduce_scatter(s.data(), r.data(), cnt, t, st);
    }
  };
  return sc;
}

std::optional<Case> broadcast_case(const CaseArgs& a) {
  if (!a.in_place) return std::nullopt;  // the interface's broadcast is in place
  const Common k(a);
  auto sc = sized_case(a, k, 1);
  if (!sc) return std::nullopt;
  Case& c = *sc;
  c.send_elems = c.recv_elems = c.count;
  const auto val = k.val();
  const int me = k.me;
  c.send_value = [=](std::size_t i) { return val(me, i); };
  c.expected = [=](std::size_t i) { return val(0, i); };
  c.call = [&comm = a.comm, cnt = c.count, t = k.t](const Buffer&, const Buffer& r, Stream st) {
    comm.broadcast(r.data(), cnt, t, 0, st);
  };
  return sc;
}

std::optional<Case> sendrecv_case(const CaseArgs& a) {
  if (a.in_place) return std::nullopt;
  const Common k(a);
  auto sc = sized_case(a, k, 1);
  if (!sc) return std::nullopt;
  Case& c = *sc;
  c.send_elems = c.recv_elems = c.count;
  const int me = k.me, n = k.n;
  const int dst = (me + 1) % n, src = (me + n - 1) % n;
  const auto val = k.val();
  c.send_value = [=](std::size_t i) { return val(me, i); };
  c.expected = [=](std::size_t i) { return val(src, i); };
  c.call = [&comm = a.comm, cnt = c.count, t = k.t, dst, src](const Buffer& s, const Buffer& r, Stream st) {
    comm.sendrecv(s.data(), dst, r.data(), src, cnt, t, st);
  };
  return sc;
}

constexpr std::array<OpSpec, 8> kOps{{
    {Op::all_gather, "all_gather", gather_factor, all_gather_case},
    {Op::all_to_all, "all_to_all", gather_factor, all_to_all_case},
    {Op::all_to_allv, "all_to_allv", gather_factor, all_to_allv_case},
    {Op::all_reduce, "all_reduce", reduce_factor, all_reduce_case},
    {Op::reduce_scatter, "reduce_scatter", gather_factor, reduce_scatter_case},
    {Op::broadcast, "broadcast", one_factor, broadcast_case},
    {Op::sendrecv, "sendrecv", one_factor, sendrecv_case},
    {Op::scalar_exchange, "scalar_exchange", gather_factor, nullptr},
}};

}  // namespace

std::span<const OpSpec> op_table() { return kOps; }

const OpSpec& spec(Op op) {
  for (const auto& s : kOps)
    if (s.op == op) return s;
  throw Error(fmt::format("op {} is not in the op table", static_cast<int>(op)));
}

}  // namespace layerbench::coll
