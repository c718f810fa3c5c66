// Op names, size parsing and the bandwidth conventions of nccl-tests.
#include "bench/coll/sweep.hpp"

#include "collectives/error.hpp"
#include "common/numeric.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>

namespace layerbench::coll {

namespace {
constexpr std::array<std::pair<Op, std::string_view>, 8> kOps{{
    {Op::all_gather, "all_gather"},
    {Op::all_to_all, "all_to_all"},
    {Op::all_to_allv, "all_to_allv"},
    {Op::all_reduce, "all_reduce"},
    {Op::reduce_scatter, "reduce_scatter"},
    {Op::broadcast, "broadcast"},
    {Op::sendrecv, "sendrecv"},
    {Op::scalar_exchange, "scalar_exchange"},
}};
}  // namespace

std::string_view to_string(Op op) {
  for (const auto& [o, n] : kOps)
    if (o == op) return n;
  return "?";
}

Op parse_op(std::string_view s) {
  std::string known;
  for (const auto& [o, n] : kOps) {
    if (n == s) return o;
    known += (known.empty() ? "" : ", ") + std::string(n);
  }
  throw UsageError(fmt::format("--ops: unknown op '{}' (known: {})", s, known));
}

std::uint64_t parse_size(const std::string& s, std::string_view what) { return num::parse_bytes(s, what); }

std::vector<std::uint64_t> size_steps(std::uint64_t begin, std::uint64_t end, double factor,
                                      std::uint64_t increment) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t s = begin; s <= end;) {
    out.push_back(s);
    const std::uint64_t next = increment ? s + increment : static_cast<std::uint64_t>(std::ceil(s * factor));
    if (next <= s) break;
    s = next;
  }
  return out;
}

double busbw_factor(Op op, int n) {
  const double nn = n;
  switch (op) {
    case Op::all_reduce: return 2.0 * (nn - 1) / nn;
    case Op::all_gather:
    case Op::reduce_scatter:
    case Op::all_to_all:
    case Op::all_to_allv:
    case Op::scalar_exchange: return (nn - 1) / nn;
    case Op::broadcast:
    case Op::sendrecv: return 1.0;
  }
  return 1.0;
}

}  // namespace layerbench::coll
