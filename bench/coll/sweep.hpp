#pragma once
// nccl-tests-style collective sweeps: per op, per size, out-of-place and in-place; data checked
// before timing (#wrong), per-iteration rank-max samples, the aggregate view, algbw and busbw.
#include "harness/options.hpp"
#include "harness/runner.hpp"
#include "collectives/communicator.hpp"
#include "reports/result.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace layerbench::coll {

inline constexpr const char* kBinary = "layerbench-coll";

enum class Op { all_gather, all_to_all, all_to_allv, all_reduce, reduce_scatter, broadcast, sendrecv,
                scalar_exchange };
std::string_view to_string(Op op);
Op parse_op(std::string_view s);  // UsageError listing the known ops

// "8", "1K", "64M", "1G" (binary multiples). UsageError naming `what` on anything else.
std::uint64_t parse_size(const std::string& s, std::string_view what = "size");
// A sweep longer than this is a typo (-f 1.0000001, -i 1 up to 16G), rejected before it is built.
inline constexpr std::uint64_t kMaxSizes = 10000;
// -b/-e with factor f (>1) or increment i (>0): nccl-tests' stepping.
std::vector<std::uint64_t> size_steps(std::uint64_t begin, std::uint64_t end, double factor,
                                      std::uint64_t increment);

// nccl-tests' bus-bandwidth factor for `n` ranks (collectives.md §2), from the op table (cases.hpp).
double busbw_factor(Op op, int n);

struct Config {
  // Free-running by default, like nccl-tests: per-iteration events in a back-to-back pipeline.
  Config() { common.align = "none"; }
  harness::CommonOptions common;
  std::vector<std::string> ops{"all_gather", "all_to_all"};
  std::string min_bytes = "8", max_bytes = "64M";
  double step_factor = 2;
  std::string step_increment;  // -i: additive step instead of -f
  std::string dtype = "bf16";
  std::string places = "both";  // out | in | both
  bool graph = false;
  std::string grid;     // "UxA"
  std::string group = "world";  // world | ulysses | allgather (needs --grid)
  double imbalance = 1.0;
  std::string matrix;   // N x N byte counts (row = sender)
  double link_gbps = 0;  // adds a % of link column
  int aggregate_iterations = 0;  // 0: same as --iterations
  bool comm_alloc = false;       // buffers from the communication library's allocator
  std::string inject_fault;      // testing: "RANK:wrong" or "RANK:throw"
};

// Everything derived from a Config, validated in one place.
struct Plan {
  std::vector<Op> op_list;
  DType type = DType::bf16;
  std::vector<std::uint64_t> sizes;
  int grid_u = 0, grid_a = 0;
  std::vector<std::vector<std::uint64_t>> matrix_bytes;
  int fault_rank = -1;
  std::string fault_kind;
};
void add_flags(CLI::App& app, Config& c);
Plan make_plan(const Config& c);  // UsageError on bad input

struct SweepResult {
  std::vector<reports::Measurement> results;
  // The cases --benchmark_filter left out (or, with --benchmark_list_tests, every case): names
  // and params only, never checked or timed.
  std::vector<reports::Measurement> unselected;
  std::uint64_t total_wrong = 0;
};
// One step of a sweep: an (op, size) with its places, or one scalar exchange.
struct Step {
  Op op;
  std::uint64_t size;  // the requested size (0 for the scalar exchange and a byte matrix)
};
std::vector<Step> sweep_steps(const Plan& plan);

// Called on every rank after each step with everything measured so far and that step's own
// measurements (empty when the size fits no element).
using StepCallback = std::function<void(const SweepResult& so_far, std::span<const reports::Measurement> step)>;

// Collective over `comm` (the world or a sub-group); timing always rank-max over the world.
SweepResult run_sweep(const Config& c, const Plan& plan, Communicator& world, Communicator& comm,
                      const harness::Runner& runner, const StepCallback& on_step = {});

// The nccl-tests-like text table, a row per (op, size) pairing out-of-place with in-place.
// Numbers keep their column widths at any magnitude.
class TablePrinter {
 public:
  explicit TablePrinter(const Config& c);
  std::string header() const;
  std::string rows(std::span<const reports::Measurement> step) const;  // the rows of one step
  std::string row(const reports::Measurement* out_of_place, const reports::Measurement* in_place) const;
  std::string footer(const SweepResult& r) const;  // out-of-bounds count, "Avg bus bandwidth"

 private:
  int cell_width() const;
  std::string cell(const reports::Measurement* m) const;
  bool link_;
  double link_gbps_;
};

// `v` right-aligned in exactly `width` characters (2, 1, 0 decimals, then exponent form).
std::string fit_number(double v, int width);
// Mean busbw (GB/s, from reports::rates_of) over every measurement with declared bus work
// (nccl-tests' "Avg bus bandwidth").
double average_busbw(const std::vector<reports::Measurement>& results);

// The whole table of a finished sweep.
std::string format_table(const Config& c, const SweepResult& r);

}  // namespace layerbench::coll
