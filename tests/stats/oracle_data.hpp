#pragma once
// Public oracle data sets of statistics.md section 3.
#include <vector>

namespace layerbench::stats::oracle {

// Darwin's corn: d as listed.
inline const std::vector<double> corn{6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75};
// Hollander & Wolfe (R wilcox.test.Rd): x - y rounded to 3 d.p.
inline const std::vector<double> hw_x{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30};
inline const std::vector<double> hw_y{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29};
inline const std::vector<double> hw_d{0.952, -0.147, 1.022, 0.43, 0.62, 0.59, 0.49, -0.08, 0.01};
// R sleep: group 1 - group 2.
inline const std::vector<double> sleep_g1{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0};
inline const std::vector<double> sleep_g2{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4};
inline const std::vector<double> sleep_d{-1.2, -2.4, -1.3, -1.3, 0.0, -1.0, -1.8, -0.8, -4.6, -1.4};

}  // namespace layerbench::stats::oracle
