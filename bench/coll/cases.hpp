#pragma once
// The collective ops of layerbench-coll as one table: per op its name, nccl-tests' bus-bandwidth
// factor and the builder of one (size, place) case (its counts, nccl-tests' size convention,
// the data, the expected output and the call). Everything else (names, factors, the sweep's
// steps, the declared work of a measurement) reads this table; nothing switches on the op.
#include "bench/coll/sweep.hpp"
#include "collectives/communicator.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace layerbench::coll {

// What one (op, size, place) case needs: buffers, the call, and the expected output.
struct Case {
  std::uint64_t bytes = 0;      // nccl-tests' size convention for the op (the declared work)
  std::size_t count = 0;        // elements per rank (the count column)
  std::size_t send_elems = 0, recv_elems = 0;
  std::vector<std::size_t> sc, sd, rc, rd;  // all_to_allv counts / displacements
  bool in_place = false;
  std::size_t in_place_offset = 0;  // where the input sits inside the output buffer, in place
  std::function<void(const Buffer& send, const Buffer& recv, Stream s)> call;
  std::function<std::int64_t(std::size_t i)> send_value;  // this rank's input
  std::function<std::int64_t(std::size_t i)> expected;    // this rank's output (INT64_MIN: not checked)
};

struct CaseArgs {
  std::uint64_t size;  // the requested size (nccl-tests' convention for the op)
  bool in_place;
  const Plan& plan;
  double imbalance;
  Communicator& comm;
  std::uint64_t seed;
};
// nullopt when the op has no such place (in-place all_to_all: N/A, as in nccl-tests) or the
// size holds less than one element per rank.
using CaseBuilder = std::optional<Case> (*)(const CaseArgs&);

struct OpSpec {
  Op op;
  std::string_view name;
  double (*bus_factor)(int ranks);  // nccl-tests: busbw = algbw x factor (collectives.md §2)
  CaseBuilder build;                // nullptr: not a buffer case (the scalar exchange, timed on its own:
                                    // one int64 from each rank to all, declared as an all_gather of 8 x ranks bytes)
};

std::span<const OpSpec> op_table();
const OpSpec& spec(Op op);

}  // namespace layerbench::coll
