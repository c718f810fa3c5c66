#pragma once
// Google Benchmark integration. Timing is never left to Google Benchmark: it would choose
// iteration counts per rank, and ranks issuing different numbers of collectives hang. Instead
// every measurement is timed by the Runner on all ranks; rank 0 then registers one benchmark
// per measurement with manual time, Iterations(1) and one repetition per rank-max sample, so
// GB's console/JSON reporters, --benchmark_filter and tools/compare.py all work on it.
#include "reports/result.hpp"

#include <string>
#include <utility>
#include <vector>

namespace layerbench::harness {

// (--benchmark_* flags, everything else); argv[0] stays first in both.
std::pair<std::vector<std::string>, std::vector<std::string>> split_gbench_args(
    const std::vector<std::string>& argv);

// Rank 0 only. `gb_args` includes argv[0].
void report_to_gbench(const std::string& binary, const std::vector<std::string>& gb_args,
                      const std::vector<reports::Measurement>& results);

// "name/group/k=v/..." — stable, filterable names.
std::string gbench_name(const std::string& binary, const reports::Measurement& m);

}  // namespace layerbench::harness
