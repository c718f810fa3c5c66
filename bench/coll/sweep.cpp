// The sweep's flags and their validation into a Plan (the op table: cases.hpp; the loop that
// checks and times every case: run.cpp).
#include "bench/coll/cases.hpp"
#include "common/input_file.hpp"

#include "collectives/error.hpp"
#include "common/cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

namespace layerbench::coll {

void add_flags(CLI::App& app, Config& c) {
  std::string names;
  for (const auto& o : op_table()) names += (names.empty() ? "" : ", ") + std::string(o.name);
  app.add_option("--ops", c.ops, "comma-separated: " + names)
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("-b,--minbytes", c.min_bytes, "smallest size (nccl-tests convention per op; K/M/G)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", c.max_bytes, "largest size")->capture_default_str();
  cli::add_real(app, "-f,--stepfactor", c.step_factor, "multiply the size by this each step",
                num::RealRange{1, 1e6, true, false});
  app.add_option("-i,--stepbytes", c.step_increment, "add this many bytes each step instead of -f");
  app.add_option("--dtype", c.dtype, "bf16, fp32 or int64")->capture_default_str();
  app.add_option("--place", c.places, "out, in or both (in-place and out-of-place)")->capture_default_str();
  harness::mark_cuda_only(app.add_flag("--graph", c.graph, "capture each timed op in a CUDA graph and time its launches"));
  app.add_option("--grid", c.grid, "UxA process grid (Ulysses groups contiguous, AllGather groups strided)");
  app.add_option("--group", c.group, "world, ulysses or allgather: run the op inside those sub-groups")
      ->capture_default_str();
  cli::add_real(app, "--imbalance", c.imbalance, "all_to_allv: rank 0 sends this many times what the others send",
                num::RealRange::closed(1, 1e6));
  app.add_option("--matrix", c.matrix, "all_to_allv: file with an N x N matrix of byte counts (row = sender)");
  cli::add_real(app, "--link-gbps", c.link_gbps, "per-GPU link bandwidth (GB/s): adds a % of link column",
                num::RealRange::non_negative(1e6));
  cli::add_int(app, "--aggregate-iterations", c.aggregate_iterations,
               "back-to-back ops in the nccl-tests-style aggregate (default: --iterations)", 0, harness::kMaxIterations);
  harness::mark_cuda_only(app.add_flag("--comm-alloc", c.comm_alloc,
               "allocate buffers with ncclMemAlloc (as nccl-tests >= 2.19 does) instead of cudaMalloc"));
  app.add_option("--inject-fault", c.inject_fault, "testing only: RANK:wrong or RANK:throw")->group("");
}

namespace {
std::vector<std::vector<std::uint64_t>> read_matrix(const std::string& path) {
  // The input layer: a directory, FIFO, device or oversized file is refused naming it.
  if (input::kind_of(path) != input::Kind::missing) input::check_file(input::Origin{"--matrix", path}, input::kMaxConfigBytes);
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("--matrix: cannot read '{}'", path));
  std::vector<std::vector<std::uint64_t>> m;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream ls(line);
    std::vector<std::uint64_t> row;
    std::string cell;
    while (ls >> cell) {
      try {
        row.push_back(parse_size(cell));
      } catch (const UsageError&) {
        throw UsageError(fmt::format("--matrix {}:{}: '{}' is not a byte count", path, line_no, cell));
      }
    }
    if (!row.empty()) m.push_back(std::move(row));
  }
  if (m.empty()) throw UsageError(fmt::format("--matrix {}: empty", path));
  for (std::size_t r = 0; r < m.size(); ++r)
    if (m[r].size() != m.size())
      throw UsageError(fmt::format("--matrix {}: row {} has {} entries, expected {} (square)", path, r + 1,
                                   m[r].size(), m.size()));
  return m;
}
}  // namespace

Plan make_plan(const Config& c) {
  Plan p;
  if (c.ops.empty()) throw UsageError("--ops: give at least one op");
  for (const auto& o : c.ops) p.op_list.push_back(parse_op(o));
  try {
    p.type = parse_dtype(c.dtype);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--dtype: ") + e.what());
  }
  const auto b = parse_size(c.min_bytes, "-b"), e = parse_size(c.max_bytes, "-e");
  if (b < 1) throw UsageError("-b must be at least 1 byte");
  if (e < b) throw UsageError(fmt::format("-e ({}) is smaller than -b ({})", c.max_bytes, c.min_bytes));
  if (e > (1ull << 34)) throw UsageError(fmt::format("-e {}: sizes above 16G are not supported", c.max_bytes));
  std::uint64_t inc = 0;
  if (!c.step_increment.empty()) {
    inc = parse_size(c.step_increment, "-i");
    if (inc == 0) throw UsageError("-i must be > 0");
  } else if (!(c.step_factor > 1.0)) {
    throw UsageError(fmt::format("-f must be > 1 (got {})", c.step_factor));
  }
  // Count the steps before building the list: -i 1 up to 16G would be 2^34 entries per rank.
  const double steps = inc ? static_cast<double>(e - b) / static_cast<double>(inc) + 1
                           : std::floor(std::log(static_cast<double>(e) / static_cast<double>(b)) / std::log(c.step_factor)) + 1;
  if (steps > static_cast<double>(kMaxSizes))
    throw UsageError(fmt::format("-b {} -e {} {} gives about {:.3g} sizes; at most {} per sweep (raise {})",
                                 c.min_bytes, c.max_bytes,
                                 inc ? fmt::format("-i {}", c.step_increment) : fmt::format("-f {}", c.step_factor),
                                 steps, kMaxSizes, inc ? "-i" : "-f"));
  p.sizes = size_steps(b, e, c.step_factor, inc);
  // Every rank holds send and receive buffers plus host copies for the data check; rank 0 of an
  // imbalanced all_to_allv sends --imbalance times more.
  const double per_rank = 4.0 * static_cast<double>(e) * std::max(1.0, c.imbalance);
  num::check_memory(per_rank < 1.8e19 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(per_rank)) : std::nullopt,
                    num::ranks_on_this_machine(), fmt::format("-e {}", c.max_bytes), "lower -e");
  if (c.places != "out" && c.places != "in" && c.places != "both")
    throw UsageError(fmt::format("--place: expected out, in or both (got '{}')", c.places));
  if (!c.grid.empty()) {
    int u = 0, a = 0;
    char x = 0;
    std::istringstream gs(c.grid);
    if (!(gs >> u >> x >> a) || x != 'x' || u < 1 || a < 1 || !gs.eof())
      throw UsageError(fmt::format("--grid: expected UxA with U, A >= 1 (got '{}')", c.grid));
    p.grid_u = u;
    p.grid_a = a;
  }
  if (c.group != "world" && c.group != "ulysses" && c.group != "allgather")
    throw UsageError(fmt::format("--group: expected world, ulysses or allgather (got '{}')", c.group));
  if (c.group != "world" && c.grid.empty()) throw UsageError("--group ulysses|allgather needs --grid UxA");
  if (!(c.imbalance >= 1.0)) throw UsageError(fmt::format("--imbalance must be >= 1 (got {})", c.imbalance));
  if (!c.matrix.empty()) p.matrix_bytes = read_matrix(c.matrix);
  if (c.link_gbps < 0) throw UsageError("--link-gbps must be >= 0");
  if (c.aggregate_iterations < 0) throw UsageError("--aggregate-iterations must be >= 0");
  if (!c.inject_fault.empty()) {
    const auto colon = c.inject_fault.find(':');
    if (colon == std::string::npos) throw UsageError("--inject-fault: expected RANK:wrong or RANK:throw");
    p.fault_rank = num::parse_int<int>(c.inject_fault.substr(0, colon), "--inject-fault RANK", 0);
    p.fault_kind = c.inject_fault.substr(colon + 1);
    if (p.fault_kind != "wrong" && p.fault_kind != "throw")
      throw UsageError("--inject-fault: kind must be wrong or throw");
  }
  return p;
}

}  // namespace layerbench::coll
