#pragma once
// Same-run re-implementations of the history detectors other projects ship, written from their
// published descriptions (docs, papers, parameter files; none of their code), for
// tools/history_sim.cpp. Each one is online: called after every new commit with the per-commit
// values so far (a commit's median), it returns an alert or nothing.
//   * Apache Otava defaults: E-divisive means (Matteson & James 2014, eq. for Q-hat with alpha = 1)
//     over the last `window` = 50 points, the split's significance from a two-sample Student t
//     test (Otava docs/MATH.md replaces permutations by a t-test), p < 0.001, magnitude 0,
//     minimum segment 3 (the maintainers' "in practice" figure, apache/otava PR #150).
//   * Mozilla Perfherder: t = |mean_fore - mean_back| / sqrt(var_back/n_back + var_fore/n_fore)
//     with a back window of 12..24 values and a fore window of 12, alert when t > 7 and the
//     change is >= 2% (treeherder perfalert, PERFHERDER_REGRESSION_THRESHOLD).
//   * Bencher's default threshold: each new value against the last 64 values, Student t
//     prediction limit mean + t_{0.99, n-1} * sd * sqrt(1 + 1/n), upper boundary only (a larger
//     time is worse); bencher_valid model defaults.
//   * github-action-benchmark: current / previous > 200% (alert-threshold default).
#include <cstddef>
#include <optional>
#include <span>

namespace layerbench::tools {

struct AnchorAlert {
  std::size_t index = 0;  // the commit the alert points at (first commit after the change)
};

// `after`: the index of the method's last alert (its history restarts there), or 0.
std::optional<AnchorAlert> otava_online(std::span<const double> x, std::size_t after);
std::optional<AnchorAlert> perfherder_online(std::span<const double> x, std::size_t after);
std::optional<AnchorAlert> bencher_online(std::span<const double> x);
std::optional<AnchorAlert> gab_online(std::span<const double> x);

// How far after a step an alert of the method is still attributed to that step: the point
// detectors keep firing while the step is inside their window.
inline constexpr std::size_t kBencherMemory = 64;

}  // namespace layerbench::tools
