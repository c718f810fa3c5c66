#pragma once
// Seeded inputs for one rank and the correctness check against single-rank attention over the
// full (gathered) sequence, computed on the host with fp64 accumulation.
#include "attention/sp_attention.hpp"

#include <cstdint>

namespace layerbench::attention {

// Tensor ids under the seed: image Q, K, V = 0, 1, 2; joint Q, K, V = 3, 4, 5; cached K, V = 6, 7.
// Host bytes of rows [row_begin, row_begin + rows) of the global [B, total_rows, H, D] tensor.
std::vector<unsigned char> make_rows(std::uint64_t seed, int tensor, DType t, long long batch,
                                     long long total_rows, long long row_begin, long long rows,
                                     int heads, int head_dim);

// Fills sp's shard, joint and cached inputs (fresh, never zeros) and synchronises.
void fill_inputs(SpAttention& sp, Device& dev, const Problem& p, std::uint64_t seed);

struct CheckResult {
  double max_abs_err = 0;   // this rank, over the checked rows
  double max_abs_ref = 0;   // this rank, largest |reference| over the same elements
  long long rows_checked = 0;  // query rows (image + joint) per batch and head
  bool all_rows = true;     // false when rows were sampled (large shapes)
};

// Compares sp's outputs (image shard and joint rows) with the reference. Checks every row
// when the reference costs at most `budget` multiply-adds, else a spread sample of at least 16
// rows (each row covers every head).
CheckResult check_outputs(const SpAttention& sp, Device& dev, const Problem& p,
                          std::uint64_t seed, double budget = 4e8);

// Relative tolerance: max |O - ref| must stay under tolerance(t) * max |ref|. Relative, because
// attention outputs shrink like 1/sqrt(Skv) with unit-variance inputs: an absolute bound that
// fits short sequences would accept an all-zero output at 64K.
double tolerance(DType t);

}  // namespace layerbench::attention
