#include "stats/changepoint.hpp"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "stats/mann_whitney.hpp"

namespace layerbench::stats {
namespace {

constexpr double kMadToSd = 1.482602218505602;  // 1 / Phi^-1(3/4)
constexpr double kMedianSe = 1.2533141373155001;  // sqrt(pi / 2): se(median) / se(mean), normal
const double kHlScale = std::sqrt(std::numbers::pi / 3.0);  // sd(HL) / sd(mean difference), normal

double median_inplace(std::vector<double>& v) {
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  return 0.5 * (*mid + *std::max_element(v.begin(), mid));
}

// The two windows around a split, clipped to `window` commits each side.
struct Windows {
  std::size_t pre_begin = 0, split = 0, post_end = 0;
  std::size_t pre() const { return split - pre_begin; }
  std::size_t post() const { return post_end - split; }
};

Windows windows_at(std::size_t index, std::size_t begin, std::size_t end, std::size_t window) {
  Windows w;
  w.split = index;
  w.pre_begin = std::max(begin, index >= window ? index - window : 0);
  w.post_end = std::min(end, index + window);
  return w;
}

// The noise of each point around its segment's level. When every commit in the look-back has
// its own standard error (several samples), the points are heteroscedastic with variance
// (kappa * se_i)^2: kappa, the ratio of the commit-to-commit spread to the within-commit one,
// is estimated robustly from successive differences (the MAD of d_i / sqrt(se_i^2 + se_{i-1}^2)),
// so a noisy stretch of CI (its runs spread more) weighs less. Otherwise (a commit with one
// sample) one sigma for all: the MAD of the successive differences / sqrt 2.
struct Noise {
  bool hetero = false;
  double kappa = 1, sigma = 0;
  double var(const CommitPoint& c) const { return hetero ? kappa * kappa * c.se * c.se : sigma * sigma; }
};

Noise noise_at(std::span<const CommitPoint> p, const Windows& w, std::size_t lookback, std::vector<double>& scratch) {
  const std::size_t from = w.post_end > lookback ? w.post_end - lookback : 0;
  Noise n;
  n.hetero = true;
  double se2 = 0;
  for (std::size_t i = from; i < w.post_end; ++i) {
    n.hetero &= p[i].se > 0;
    se2 = std::max(se2, p[i].se * p[i].se);
  }
  scratch.clear();
  for (std::size_t i = from + 1; i < w.post_end; ++i) {
    if (i == w.split) continue;  // the difference across the split holds the step
    const double d = std::abs(p[i].y - p[i - 1].y);
    scratch.push_back(n.hetero ? d / std::sqrt(p[i].se * p[i].se + p[i - 1].se * p[i - 1].se) : d);
  }
  const double mad = scratch.empty() ? 0.0 : kMadToSd * median_inplace(scratch);
  if (n.hetero) {
    // kappa may come out below 1: samples within a run are seldom independent, so a run's median
    // can vary less from run to run than its samples' spread suggests. The history decides.
    n.kappa = std::max(mad, 1e-3);
  } else {
    n.sigma = std::max({mad / std::numbers::sqrt2, std::sqrt(se2), 1e-12});
  }
  return n;
}

void pairwise_differences(std::span<const CommitPoint> p, const Windows& w, std::vector<double>& out) {
  out.clear();
  out.reserve(w.pre() * w.post());
  for (std::size_t j = w.split; j < w.post_end; ++j)
    for (std::size_t i = w.pre_begin; i < w.split; ++i) out.push_back(p[j].y - p[i].y);
}

struct Scan {
  double z = 0, shift = 0, sigma = 0;
};

// z of the HL shift: its standard error from the points' own variances, Welch-style,
// sqrt(pi/3) * sqrt(mean var_post / m + mean var_pre / n).
Scan scan_at(std::span<const CommitPoint> p, const Windows& w, std::size_t lookback, std::vector<double>& a,
             std::vector<double>& b) {
  Scan s;
  const Noise noise = noise_at(p, w, lookback, a);
  double v_pre = 0, v_post = 0;
  for (std::size_t i = w.pre_begin; i < w.split; ++i) v_pre += noise.var(p[i]);
  for (std::size_t i = w.split; i < w.post_end; ++i) v_post += noise.var(p[i]);
  const double m = double(w.post()), n = double(w.pre());
  s.sigma = std::sqrt((v_pre + v_post) / (m + n));
  pairwise_differences(p, w, b);
  s.shift = median_inplace(b);
  const double se = kHlScale * std::sqrt(v_post / (m * m) + v_pre / (n * n));
  s.z = se > 0 ? s.shift / se : 0.0;
  return s;
}

bool passes(const Scan& s, const ChangePointOptions& o) {
  return std::abs(s.z) >= o.threshold && std::abs(std::expm1(s.shift)) >= o.min_magnitude;
}

// L1 cost of a two-median fit of [from, to) split at `split`.
double l1_cost(std::span<const CommitPoint> p, std::size_t from, std::size_t split, std::size_t to,
               std::vector<double>& scratch) {
  double cost = 0;
  for (auto [lo, hi] : {std::pair{from, split}, std::pair{split, to}}) {
    scratch.clear();
    for (std::size_t i = lo; i < hi; ++i) scratch.push_back(p[i].y);
    const double med = median_inplace(scratch);
    for (std::size_t i = lo; i < hi; ++i) cost += std::abs(p[i].y - med);
  }
  return cost;
}

// The contiguous splits around w.split whose profile-likelihood drop is within chi2_1(0.95).
std::pair<std::size_t, std::size_t> commit_range(std::span<const CommitPoint> p, const Windows& w, double sigma) {
  std::vector<double> scratch;
  const double b = sigma * std::sqrt(2.0 / std::numbers::pi);  // Laplace scale with sd-matched mean |e|
  const double best = l1_cost(p, w.pre_begin, w.split, w.post_end, scratch);
  auto inside = [&](std::size_t s) {
    return 2.0 * (l1_cost(p, w.pre_begin, s, w.post_end, scratch) - best) / b <= 3.841458820694124;
  };
  std::size_t lo = w.split, hi = w.split;
  while (lo > w.pre_begin + 1 && inside(lo - 1)) --lo;
  while (hi + 1 < w.post_end && inside(hi + 1)) ++hi;
  return {lo, hi};
}

}  // namespace

void ChangePointOptions::validate() const {
  if (!(threshold > 0) || !std::isfinite(threshold))
    throw std::invalid_argument(fmt::format("change-point threshold {} must be > 0", threshold));
  if (!(min_magnitude >= 0 && min_magnitude < 1))
    throw std::invalid_argument(fmt::format("minimum magnitude {} must be in [0, 1)", min_magnitude));
  if (min_post < 2) throw std::invalid_argument("change points need at least 2 commits after the split");
  if (min_pre < 2) throw std::invalid_argument("change points need at least 2 commits before the split");
  if (window < std::max(min_pre, min_post)) throw std::invalid_argument("window smaller than the minimum segments");
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument(fmt::format("confidence {} not in (0, 1)", confidence));
}

CommitPoint commit_point(std::span<const double> samples) {
  if (samples.empty()) throw std::invalid_argument("a commit without samples");
  std::vector<double> logs;
  logs.reserve(samples.size());
  for (double v : samples) {
    if (!(v > 0) || !std::isfinite(v))
      throw std::invalid_argument(fmt::format("sample {} is not a positive finite number", v));
    logs.push_back(std::log(v));
  }
  CommitPoint c;
  auto copy = logs;
  c.y = median_inplace(copy);
  if (logs.size() >= 2) {
    for (double& v : logs) v = std::abs(v - c.y);
    c.se = kMedianSe * kMadToSd * median_inplace(logs) / std::sqrt(double(samples.size()));
  }
  return c;
}

StepEstimate estimate_step(std::span<const CommitPoint> points, std::size_t index, std::size_t begin,
                           std::size_t end, const ChangePointOptions& o) {
  if (!(begin < index && index < end && end <= points.size()))
    throw std::invalid_argument("estimate_step: a window is empty");
  const Windows w = windows_at(index, begin, end, o.window);
  std::vector<double> a, d;
  const Scan s = scan_at(points, w, o.noise_lookback, a, d);
  StepEstimate e;
  e.index = index;
  e.pre = w.pre();
  e.post = w.post();
  e.shift = s.shift;
  e.relative = std::expm1(s.shift);
  e.z = s.z;
  e.sigma = s.sigma;
  // Interval: order statistics of the m*n differences (Hollander & Wolfe 4.3, normal form).
  std::sort(d.begin(), d.end());
  const double mn = double(d.size()), m = double(w.post()), n = double(w.pre());
  const double zq = boost::math::quantile(boost::math::normal(), 0.5 + o.confidence / 2);
  const double c = std::floor(mn / 2 - zq * std::sqrt(mn * (m + n + 1) / 12.0) - 0.5);
  if (c >= 0) {
    const auto k = static_cast<std::size_t>(c);
    e.interval = {std::expm1(d[k]), std::expm1(d[d.size() - 1 - k])};
  } else {
    e.interval = {-1.0, std::numeric_limits<double>::infinity()};  // too few commits for this level
  }
  std::vector<double> pre, post;
  for (std::size_t i = w.pre_begin; i < w.split; ++i) pre.push_back(points[i].y);
  for (std::size_t i = w.split; i < w.post_end; ++i) post.push_back(points[i].y);
  e.p = mann_whitney_u(post, pre).p;
  std::tie(e.range_low, e.range_high) = commit_range(points, w, s.sigma);
  return e;
}

std::vector<StepEstimate> detect_changes(std::span<const CommitPoint> points, const ChangePointOptions& o) {
  o.validate();
  const std::size_t n = points.size();
  std::vector<std::size_t> cps;  // sorted
  std::vector<double> z(n, 0.0);
  std::vector<char> valid(n, 0);
  std::vector<double> a, b;
  auto bounds = [&](std::size_t t) {
    std::size_t lo = 0, hi = n;
    for (std::size_t c : cps) {
      if (c < t) lo = c;
      if (c > t) {
        hi = c;
        break;
      }
    }
    return std::pair{lo, hi};
  };
  auto passes_at = [&](std::size_t t, std::size_t lo, std::size_t hi) {
    const Windows w = windows_at(t, lo, hi, o.window);
    if (w.pre() < o.min_pre || w.post() < o.min_post) return 0.0;
    const Scan s = scan_at(points, w, o.noise_lookback, a, b);
    return passes(s, o) ? s.z : 0.0;
  };
  while (true) {
    double best = 0;
    std::size_t best_t = 0;
    for (std::size_t t = 1; t < n; ++t) {
      if (std::binary_search(cps.begin(), cps.end(), t)) continue;
      if (!valid[t]) {
        const auto [lo, hi] = bounds(t);
        z[t] = passes_at(t, lo, hi);
        valid[t] = 1;
      }
      if (std::abs(z[t]) > best) {
        best = std::abs(z[t]);
        best_t = t;
      }
    }
    if (best == 0) break;
    // The largest z finds the change; the best two-median L1 fit among the passing splits of the
    // same sign around it places it (z favours splits with balanced windows).
    const auto [lo, hi] = bounds(best_t);
    const std::size_t from = std::max(lo, best_t > o.window ? best_t - o.window : 0);
    const std::size_t to = std::min(hi, best_t + o.window);
    double best_cost = std::numeric_limits<double>::infinity();
    std::size_t place = best_t;
    for (std::size_t t = from + 1; t < to; ++t) {
      if (!valid[t] || z[t] == 0 || (z[t] > 0) != (z[best_t] > 0)) continue;
      const double cost = l1_cost(points, from, t, to, a);
      if (cost < best_cost) {
        best_cost = cost;
        place = t;
      }
    }
    cps.insert(std::upper_bound(cps.begin(), cps.end(), place), place);
    for (std::size_t t = lo; t < hi; ++t) valid[t] = 0;
  }
  // Pruning: with all change points in place, one whose windows (bounded by its neighbours) no
  // longer pass was an artefact of a misplaced neighbour: drop it and look again.
  for (bool dropped = true; dropped && !cps.empty();) {
    dropped = false;
    for (std::size_t i = 0; i < cps.size() && !dropped; ++i) {
      if (passes_at(cps[i], i == 0 ? 0 : cps[i - 1], i + 1 == cps.size() ? n : cps[i + 1]) != 0) continue;
      cps.erase(cps.begin() + static_cast<std::ptrdiff_t>(i));
      dropped = true;
    }
  }
  std::vector<StepEstimate> out;
  for (std::size_t i = 0; i < cps.size(); ++i) {
    const std::size_t lo = i == 0 ? 0 : cps[i - 1];
    const std::size_t hi = i + 1 == cps.size() ? n : cps[i + 1];
    out.push_back(estimate_step(points, cps[i], lo, hi, o));
  }
  return out;
}

std::optional<StepEstimate> detect_recent(std::span<const CommitPoint> points, std::size_t after, std::size_t max_post,
                                          const ChangePointOptions& o) {
  const std::size_t n = points.size();
  if (n < after + o.min_pre + o.min_post) return std::nullopt;
  std::vector<double> a, b;
  const std::size_t first = std::max(after + o.min_pre, n > max_post ? n - max_post : 0);
  // Detection: some split passes. Location: among the passing splits, the one with the best
  // two-median L1 fit of one common stretch (the profile-likelihood estimate), which places
  // the step better than the largest z (z favours longer post windows).
  const std::size_t region = std::max(after, first > o.window ? first - o.window : 0);
  double best_cost = std::numeric_limits<double>::infinity();
  std::size_t best_t = 0;
  for (std::size_t t = first; t + o.min_post <= n; ++t) {
    const Scan s = scan_at(points, windows_at(t, after, n, o.window), o.noise_lookback, a, b);
    if (!passes(s, o)) continue;
    const double cost = l1_cost(points, region, t, n, a);
    if (cost < best_cost) {
      best_cost = cost;
      best_t = t;
    }
  }
  if (best_t == 0) return std::nullopt;
  return estimate_step(points, best_t, after, n, o);
}

}  // namespace layerbench::stats
