#pragma once
// Sample size and power of the paired t test (statistics.md 2.7), and the smallest p a rank test
// can reach with n pairs.
#include <cstddef>

namespace layerbench::stats {

enum class TDesign { paired, two_sample };

// Power of the two-sided t test at level alpha: P(T' > t_{1-alpha/2, df}) with the noncentral t
// (R power.t.test, strict = FALSE). n is pairs (paired) or per group (two-sample); may be fractional.
double t_test_power(double n, double effect, double sd, double alpha = 0.05,
                    TDesign design = TDesign::paired);

struct SamplePlan {
  double n_normal = 0;   // ((z_{1-alpha/2} + z_{power}) sd / effect)^2
  double n_t = 0;        // fixed point of the same with t quantiles at n - 1 df
  double n_exact = 0;    // root of t_test_power(n) = power (noncentral t)
  std::size_t recommended = 0;  // ceil(n_exact), never below the rank-test floor of 6
};
// Pairs needed to detect `effect` (sign ignored) with the given sd, alpha (two-sided) and power.
// Throws std::invalid_argument for effect == 0, sd <= 0, alpha or power outside (0, 1).
SamplePlan plan_paired(double sd, double effect, double alpha = 0.05, double power = 0.8);

// Exact sample size of R power.t.test for a design (fractional n solving power(n) = target).
double t_test_sample_size(double effect, double sd, double alpha, double power, TDesign design);

// Smallest two-sided p the signed-rank or sign test can reach with n non-zero pairs: 2 / 2^n.
double min_p_signed_rank(std::size_t n);
// Smallest two-sided exact Mann-Whitney p with n1 and n2 values: 2 / C(n1 + n2, n1).
double min_p_rank_sum(std::size_t n1, std::size_t n2);
// Fewest pairs with which a two-sided rank test can reach p < alpha (6 at alpha = 0.05).
std::size_t min_pairs_for_alpha(double alpha);

}  // namespace layerbench::stats
