#pragma once
// Threshold limits from a history of one benchmark (what history-based gates such as Bencher
// compute): an upper limit that a new value should stay under with probability `boundary`.
#include <cstddef>

namespace layerbench::stats {

// mean + z_boundary * sd: the normal quantile, history treated as the population.
double z_score_upper_limit(double mean, double sd, double boundary);
// mean + t_{boundary, n-1} * sd * sqrt(1 + 1/n): the one-sided t prediction limit for one new
// value given a history of n values (n >= 2). Throws std::invalid_argument otherwise.
double t_test_upper_limit(double mean, double sd, std::size_t n, double boundary);

}  // namespace layerbench::stats
