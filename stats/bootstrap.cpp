#include "stats/bootstrap.hpp"

#include <algorithm>
#include <atomic>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "stats/summary.hpp"

namespace layerbench::stats {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// xoshiro256++: fast, 256-bit state, good equidistribution; one stream per block of resamples.
class Xoshiro256 {
 public:
  Xoshiro256(std::uint64_t seed, std::uint64_t stream) {
    std::uint64_t sm = seed ^ (stream * 0xD1B54A32D192ED03ULL);
    for (auto& w : s_) w = splitmix64(sm);
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[0] + s_[3], 23) + s_[0];
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

// Unbiased index in [0, n) from 32 random bits (Lemire's multiply-and-reject).
template <class Refill>
std::uint32_t bounded(std::uint32_t bits, std::uint32_t n, std::uint32_t threshold, Refill&& refill) {
  std::uint64_t m = static_cast<std::uint64_t>(bits) * n;
  while (static_cast<std::uint32_t>(m) < threshold) m = static_cast<std::uint64_t>(refill()) * n;
  return static_cast<std::uint32_t>(m >> 32);
}

std::size_t choose_threads(std::size_t requested, std::size_t work, std::size_t num_blocks) {
  std::size_t threads = requested != 0 ? requested : std::max(1u, std::thread::hardware_concurrency());
  // Starting a thread costs tens of microseconds: below ~4M index draws one thread is faster.
  if (requested == 0 && work < (std::size_t{1} << 22)) threads = 1;
  return std::max<std::size_t>(1, std::min(threads, num_blocks));
}

// Runs body(block) for every block on `threads` workers; blocks are independent.
template <class Body>
void for_each_block(std::size_t num_blocks, std::size_t threads, Body&& body) {
  if (threads <= 1) {
    for (std::size_t b = 0; b < num_blocks; ++b) body(b);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (std::size_t b = next++; b < num_blocks; b = next++) body(b);
    });
  }
  for (auto& th : pool) th.join();
}

// Type-7 quantile of an unsorted vector by selection (O(B) instead of an O(B log B) sort).
double select_quantile(std::vector<double>& v, double p) {
  const double h = p * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
  const double x_lo = v[lo];
  if (h == static_cast<double>(lo)) return x_lo;
  const double x_hi = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end());
  return x_lo + (h - static_cast<double>(lo)) * (x_hi - x_lo);
}

double normal_quantile(double p) { return boost::math::quantile(boost::math::normal(), p); }
double normal_cdf(double z) { return boost::math::cdf(boost::math::normal(), z); }

double sample_sd(std::span<const double> v) {
  if (v.size() < 2) return nan_value;
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

void validate(std::size_t n, const BootstrapOptions& o) {
  if (n < 2) throw std::invalid_argument("bootstrap needs at least 2 rows");
  if (n > std::numeric_limits<std::uint32_t>::max()) throw std::invalid_argument("bootstrap: too many rows");
  if (o.resamples < 2) throw std::invalid_argument("bootstrap needs at least 2 resamples");
  if (!(o.confidence > 0 && o.confidence < 1)) throw std::invalid_argument("confidence must be in (0, 1)");
}

// Fills the intervals of `r` from the resampled statistics and the jackknife values.
void finish(BootstrapResult& r, std::vector<double>& thetas, std::span<const double> jackknife,
            const BootstrapOptions& o) {
  r.resamples = o.resamples;
  r.seed = o.seed;
  const bool any_nan = std::any_of(thetas.begin(), thetas.end(), [](double v) { return std::isnan(v); });
  if (any_nan || std::isnan(r.estimate)) {
    r.warnings.push_back("bootstrap: the statistic is NaN on some resamples; intervals are NaN");
    return;
  }
  r.standard_error = sample_sd(thetas);
  const auto [lo, hi] = std::minmax_element(thetas.begin(), thetas.end());
  if (*lo == *hi) {
    r.warnings.push_back("bootstrap: degenerate data (all resampled statistics equal); intervals are NaN");
    return;
  }
  r.percentile = percentile_interval(thetas, o.confidence, o.alternative);
  r.acceleration = jackknife_acceleration(jackknife);
  r.bca = bca_interval(thetas, r.estimate, r.acceleration, o.confidence, o.alternative, &r.z0);
  if (std::isnan(r.acceleration)) {
    r.warnings.push_back("bootstrap: jackknife values all equal; BCa interval is NaN");
  } else if (!std::isfinite(r.z0)) {
    r.warnings.push_back("bootstrap: estimate outside the resampled range; BCa interval is NaN");
  }
}

}  // namespace

void ResampleStream::draw_block(std::size_t block, std::size_t count,
                                const std::function<void(std::span<const std::uint32_t>)>& visit) const {
  Xoshiro256 rng(seed_, block);
  const auto n = static_cast<std::uint32_t>(n_);
  const std::uint32_t threshold = static_cast<std::uint32_t>(-n) % n;
  std::vector<std::uint32_t> idx(n_);
  // Each 64-bit output feeds two indices.
  std::uint64_t word = 0;
  bool have_half = false;
  auto next32 = [&]() -> std::uint32_t {
    if (have_half) {
      have_half = false;
      return static_cast<std::uint32_t>(word >> 32);
    }
    word = rng.next();
    have_half = true;
    return static_cast<std::uint32_t>(word);
  };
  for (std::size_t r = 0; r < count; ++r) {
    for (std::size_t j = 0; j < n_; ++j) idx[j] = bounded(next32(), n, threshold, next32);
    visit(idx);
  }
}

Interval percentile_interval(std::vector<double>& thetas, double confidence, Alternative alternative) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (alternative) {
    case Alternative::two_sided: {
      const double alpha = (1 - confidence) / 2;
      return {select_quantile(thetas, alpha), select_quantile(thetas, 1 - alpha)};
    }
    case Alternative::less: return {-inf, select_quantile(thetas, confidence)};
    case Alternative::greater: return {select_quantile(thetas, 1 - confidence), inf};
  }
  return {};
}

double jackknife_acceleration(std::span<const double> leave_one_out) {
  if (leave_one_out.empty()) return nan_value;
  const double mean = std::accumulate(leave_one_out.begin(), leave_one_out.end(), 0.0) /
                      static_cast<double>(leave_one_out.size());
  double s2 = 0, s3 = 0;
  for (double v : leave_one_out) {
    const double u = mean - v;  // the factor n - 1 cancels in the ratio
    s2 += u * u;
    s3 += u * u * u;
  }
  if (s2 == 0 || !std::isfinite(s2)) return nan_value;
  return s3 / (6.0 * std::pow(s2, 1.5));
}

Interval bca_interval(std::vector<double>& thetas, double estimate, double acceleration,
                      double confidence, Alternative alternative, double* z0_out) {
  std::size_t below = 0, at_or_below = 0;
  for (double v : thetas) {
    below += v < estimate;
    at_or_below += v <= estimate;
  }
  const double p0 = static_cast<double>(below + at_or_below) / (2.0 * static_cast<double>(thetas.size()));
  const double z0 = (p0 <= 0 || p0 >= 1) ? (p0 <= 0 ? -INFINITY : INFINITY) : normal_quantile(p0);
  if (z0_out) *z0_out = z0;
  if (!std::isfinite(z0) || !std::isfinite(acceleration)) return {};
  auto adjusted = [&](double level) {
    const double z = normal_quantile(level);
    return normal_cdf(z0 + (z0 + z) / (1 - acceleration * (z0 + z)));
  };
  const double inf = std::numeric_limits<double>::infinity();
  switch (alternative) {
    case Alternative::two_sided: {
      const double alpha = (1 - confidence) / 2;
      return {select_quantile(thetas, adjusted(alpha)), select_quantile(thetas, adjusted(1 - alpha))};
    }
    case Alternative::less: return {-inf, select_quantile(thetas, adjusted(confidence))};
    case Alternative::greater: return {select_quantile(thetas, adjusted(1 - confidence)), inf};
  }
  return {};
}

BootstrapResult bootstrap(std::size_t n, const IndexStatistic& statistic, const BootstrapOptions& o) {
  validate(n, o);
  BootstrapResult r;
  std::vector<std::uint32_t> all(n);
  std::iota(all.begin(), all.end(), 0u);
  r.estimate = statistic(all);

  const ResampleStream stream(o.seed, n);
  const std::size_t num_blocks = (o.resamples + ResampleStream::block_size - 1) / ResampleStream::block_size;
  std::vector<double> thetas(o.resamples);
  for_each_block(num_blocks, choose_threads(o.num_threads, n * o.resamples, num_blocks), [&](std::size_t b) {
    const std::size_t first = b * ResampleStream::block_size;
    const std::size_t count = std::min(ResampleStream::block_size, o.resamples - first);
    std::size_t j = first;
    stream.draw_block(b, count, [&](std::span<const std::uint32_t> idx) { thetas[j++] = statistic(idx); });
  });

  std::vector<double> jackknife(n);
  std::vector<std::uint32_t> loo(n - 1);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t k = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (j != i) loo[k++] = static_cast<std::uint32_t>(j);
    }
    jackknife[i] = statistic(loo);
  }
  finish(r, thetas, jackknife, o);
  return r;
}

MeanMedianBootstrap bootstrap_mean_median(std::span<const double> x, const BootstrapOptions& o) {
  const std::size_t n = x.size();
  validate(n, o);
  // Position of every row in sorted order: the median of a resample is read off the counts.
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return x[a] < x[b]; });
  std::vector<double> sorted(n);
  std::vector<std::uint32_t> position(n);
  for (std::size_t p = 0; p < n; ++p) {
    sorted[p] = x[order[p]];
    position[order[p]] = static_cast<std::uint32_t>(p);
  }
  const double h = 0.5 * static_cast<double>(n - 1);
  const auto lo_rank = static_cast<std::size_t>(std::floor(h));
  const auto hi_rank = static_cast<std::size_t>(std::ceil(h));

  MeanMedianBootstrap out;
  out.mean.estimate = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(n);
  out.median.estimate = quantile_sorted(sorted, 0.5);

  const ResampleStream stream(o.seed, n);
  const std::size_t num_blocks = (o.resamples + ResampleStream::block_size - 1) / ResampleStream::block_size;
  std::vector<double> means(o.resamples), medians(o.resamples);
  const double inv_n = 1.0 / static_cast<double>(n);
  for_each_block(num_blocks, choose_threads(o.num_threads, n * o.resamples, num_blocks), [&](std::size_t b) {
    std::vector<std::uint32_t> counts(n, 0);
    const std::size_t first = b * ResampleStream::block_size;
    const std::size_t count = std::min(ResampleStream::block_size, o.resamples - first);
    std::size_t j = first;
    stream.draw_block(b, count, [&](std::span<const std::uint32_t> idx) {
      double sum = 0;
      for (auto i : idx) {
        sum += x[i];
        ++counts[position[i]];
      }
      means[j] = sum * inv_n;
      std::size_t cumulative = 0, p = 0;
      while ((cumulative += counts[p]) <= lo_rank) ++p;
      const double lo = sorted[p];
      while (cumulative <= hi_rank) cumulative += counts[++p];
      medians[j] = lo + (h - static_cast<double>(lo_rank)) * (sorted[p] - lo);  // type-7, as quantile_sorted
      std::fill(counts.begin(), counts.end(), 0u);
      ++j;
    });
  });

  // Leave-one-out values in closed form: O(n) in total.
  std::vector<double> jack_mean(n), jack_median(n);
  const double total = out.mean.estimate * static_cast<double>(n);
  for (std::size_t i = 0; i < n; ++i) jack_mean[i] = (total - x[i]) / static_cast<double>(n - 1);
  const double hm = 0.5 * static_cast<double>(n - 2);
  const auto lm = static_cast<std::size_t>(std::floor(hm));
  const auto um = static_cast<std::size_t>(std::ceil(hm));
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t gone = position[i];
    auto at = [&](std::size_t k) { return sorted[k < gone ? k : k + 1]; };
    jack_median[i] = at(lm) + (hm - static_cast<double>(lm)) * (at(um) - at(lm));
  }
  finish(out.mean, means, jack_mean, o);
  finish(out.median, medians, jack_median, o);
  return out;
}

}  // namespace layerbench::stats
