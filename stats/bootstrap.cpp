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
#include "stats/tests.hpp"

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

// Places the order statistics of the given ranks (sorted, unique) at their positions by
// recursive selection: about log2(k) passes over the data instead of one per quantile.
void select_ranks(std::vector<double>& v, std::size_t first, std::size_t last, const std::size_t* ranks,
                  std::size_t num_ranks) {
  if (num_ranks == 0 || first >= last) return;
  const std::size_t mid = num_ranks / 2;
  const std::size_t r = ranks[mid];
  std::nth_element(v.begin() + static_cast<std::ptrdiff_t>(first), v.begin() + static_cast<std::ptrdiff_t>(r),
                   v.begin() + static_cast<std::ptrdiff_t>(last));
  select_ranks(v, first, r, ranks, mid);
  select_ranks(v, r + 1, last, ranks + mid + 1, num_ranks - mid - 1);
}

// Order statistics at `ranks` (sorted, unique) by sampling (Floyd-Rivest): a strided sample
// brackets each rank between two values, one pass collects the few elements inside each bracket,
// and only those are selected. About one pass over the data instead of two or three per rank.
// Returns false when a bracket misses its rank (then the caller falls back to full selection).
bool sampled_order_statistics(const std::vector<double>& v, const std::vector<std::size_t>& ranks,
                              std::vector<double>& out) {
  constexpr std::size_t num_samples = 4096;
  const std::size_t size = v.size();
  std::vector<double> sample(num_samples);
  const std::size_t stride = size / num_samples;
  for (std::size_t k = 0; k < num_samples; ++k) sample[k] = v[k * stride];
  std::sort(sample.begin(), sample.end());
  struct Window {
    double low, high;
    std::size_t below = 0;
    std::vector<double> inside;
  };
  // One window per group of nearby ranks (the two ranks around each quantile level share one).
  std::vector<Window> windows;
  std::vector<std::size_t> window_of(ranks.size());
  const double inf = std::numeric_limits<double>::infinity();
  auto sample_position = [&](std::size_t r, double sign) {
    const double q = static_cast<double>(r) / static_cast<double>(size - 1);
    const double margin = 5.0 * std::sqrt(static_cast<double>(num_samples) * q * (1 - q)) + 8.0;
    return q * static_cast<double>(num_samples - 1) + sign * margin;
  };
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    if (k > 0 && ranks[k] - ranks[k - 1] <= 2 * stride) {
      window_of[k] = windows.size() - 1;
      const double hi_pos = sample_position(ranks[k], +1);
      windows.back().high = hi_pos >= static_cast<double>(num_samples - 1) ? inf
                                                                           : sample[static_cast<std::size_t>(hi_pos) + 1];
      continue;
    }
    const double lo_pos = sample_position(ranks[k], -1);
    const double hi_pos = sample_position(ranks[k], +1);
    window_of[k] = windows.size();
    windows.push_back({lo_pos < 0 ? -inf : sample[static_cast<std::size_t>(lo_pos)],
                       hi_pos >= static_cast<double>(num_samples - 1) ? inf : sample[static_cast<std::size_t>(hi_pos) + 1],
                       0, {}});
  }
  for (double x : v) {
    for (auto& w : windows) {
      w.below += x < w.low;
      if (x >= w.low && x <= w.high) w.inside.push_back(x);
    }
  }
  out.resize(ranks.size());
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    auto& w = windows[window_of[k]];
    if (ranks[k] < w.below || ranks[k] >= w.below + w.inside.size()) return false;
    const auto nth = w.inside.begin() + static_cast<std::ptrdiff_t>(ranks[k] - w.below);
    std::nth_element(w.inside.begin(), nth, w.inside.end());
    out[k] = *nth;
  }
  return true;
}

// Type-7 quantiles of an unsorted vector (may be reordered) for several probabilities at once.
std::vector<double> select_quantiles(std::vector<double>& v, const std::vector<double>& ps) {
  std::vector<std::size_t> ranks;
  for (double p : ps) {
    const double h = p * static_cast<double>(v.size() - 1);
    ranks.push_back(static_cast<std::size_t>(std::floor(h)));
    ranks.push_back(static_cast<std::size_t>(std::ceil(h)));
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::vector<double> values;
  if (v.size() < 50000 || !sampled_order_statistics(v, ranks, values)) {
    select_ranks(v, 0, v.size(), ranks.data(), ranks.size());
    values.clear();
    for (auto r : ranks) values.push_back(v[r]);
  }
  auto at = [&](std::size_t rank) {
    return values[static_cast<std::size_t>(std::lower_bound(ranks.begin(), ranks.end(), rank) - ranks.begin())];
  };
  std::vector<double> out;
  for (double p : ps) {
    const double h = p * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const auto hi = static_cast<std::size_t>(std::ceil(h));
    out.push_back(at(lo) + (h - static_cast<double>(lo)) * (at(hi) - at(lo)));
  }
  return out;
}

double normal_quantile(double p) { return boost::math::quantile(boost::math::normal(), p); }
double normal_cdf(double z) { return boost::math::cdf(boost::math::normal(), z); }

void validate(std::size_t n, const BootstrapOptions& o) {
  if (n < 2) throw std::invalid_argument("bootstrap needs at least 2 rows");
  if (n > std::numeric_limits<std::uint32_t>::max()) throw std::invalid_argument("bootstrap: too many rows");
  if (o.resamples < 2) throw std::invalid_argument("bootstrap needs at least 2 resamples");
  if (!(o.confidence > 0 && o.confidence < 1)) throw std::invalid_argument("confidence must be in (0, 1)");
}

// The two quantile levels of an interval; NaN marks the open (infinite) end of a one-sided one.
std::pair<double, double> interval_levels(double confidence, Alternative alternative) {
  switch (alternative) {
    case Alternative::two_sided: return {(1 - confidence) / 2, 1 - (1 - confidence) / 2};
    case Alternative::less: return {nan_value, confidence};
    case Alternative::greater: return {1 - confidence, nan_value};
  }
  return {nan_value, nan_value};
}

// BCa bias correction z0 = Phi^-1(p0), p0 = (#{theta* < estimate} + #{theta* <= estimate}) / 2B.
double bca_z0(const std::vector<double>& thetas, double estimate) {
  std::size_t below = 0, at_or_below = 0;
  for (double v : thetas) {
    below += v < estimate;
    at_or_below += v <= estimate;
  }
  const double p0 = static_cast<double>(below + at_or_below) / (2.0 * static_cast<double>(thetas.size()));
  if (p0 <= 0) return -std::numeric_limits<double>::infinity();
  if (p0 >= 1) return std::numeric_limits<double>::infinity();
  return normal_quantile(p0);
}

double bca_level(double level, double z0, double acceleration) {
  if (std::isnan(level)) return level;
  const double z = normal_quantile(level);
  return normal_cdf(z0 + (z0 + z) / (1 - acceleration * (z0 + z)));
}

// Quantiles at the given levels in one selection pass; NaN levels give -inf (low) / +inf (high).
std::vector<Interval> intervals_at(std::vector<double>& thetas, const std::vector<std::pair<double, double>>& levels) {
  std::vector<double> ps;
  for (const auto& [lo, hi] : levels) {
    if (!std::isnan(lo)) ps.push_back(lo);
    if (!std::isnan(hi)) ps.push_back(hi);
  }
  const auto q = select_quantiles(thetas, ps);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Interval> out;
  std::size_t k = 0;
  for (const auto& [lo, hi] : levels) {
    Interval i{-inf, inf};
    if (!std::isnan(lo)) i.low = q[k++];
    if (!std::isnan(hi)) i.high = q[k++];
    out.push_back(i);
  }
  return out;
}

// Fills the intervals of `r` from the resampled statistics and the jackknife values.
void finish(BootstrapResult& r, std::vector<double>& thetas, std::span<const double> jackknife,
            const BootstrapOptions& o) {
  r.resamples = o.resamples;
  r.seed = o.seed;
  // One pass for NaN, range and mean; a second for the sd (two-pass: no cancellation).
  bool any_nan = false;
  double lo = thetas.front(), hi = thetas.front(), sum = 0;
  for (double v : thetas) {
    any_nan |= std::isnan(v);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  if (any_nan || std::isnan(r.estimate)) {
    r.warnings.push_back("bootstrap: the statistic is NaN on some resamples; intervals are NaN");
    return;
  }
  const double mean = sum / static_cast<double>(thetas.size());
  double ss = 0;
  for (double v : thetas) ss += (v - mean) * (v - mean);
  r.standard_error = std::sqrt(ss / static_cast<double>(thetas.size() - 1));
  if (lo == hi) {
    r.warnings.push_back("bootstrap: degenerate data (all resampled statistics equal); intervals are NaN");
    return;
  }
  r.acceleration = jackknife_acceleration(jackknife);
  r.z0 = bca_z0(thetas, r.estimate);
  const auto levels = interval_levels(o.confidence, o.alternative);
  if (std::isfinite(r.z0) && std::isfinite(r.acceleration)) {
    const std::pair<double, double> bca{bca_level(levels.first, r.z0, r.acceleration),
                                        bca_level(levels.second, r.z0, r.acceleration)};
    const auto both = intervals_at(thetas, {levels, bca});  // one selection for all four bounds
    r.percentile = both[0];
    r.bca = both[1];
  } else {
    r.percentile = intervals_at(thetas, {levels})[0];
  }
  if (std::isnan(r.acceleration)) {
    r.warnings.push_back("bootstrap: jackknife values all equal; BCa interval is NaN");
  } else if (!std::isfinite(r.z0)) {
    r.warnings.push_back("bootstrap: estimate outside the resampled range; BCa interval is NaN");
  }
}

}  // namespace

double mean_of_indices(std::span<const double> x, std::span<const std::uint32_t> indices) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t j = 0;
  const std::size_t m = indices.size();
  for (; j + 4 <= m; j += 4) {
    s0 += x[indices[j]];
    s1 += x[indices[j + 1]];
    s2 += x[indices[j + 2]];
    s3 += x[indices[j + 3]];
  }
  for (; j < m; ++j) s0 += x[indices[j]];
  return ((s0 + s1) + (s2 + s3)) / static_cast<double>(m);
}

void ResampleStream::draw_block(std::size_t block, std::size_t count,
                                const std::function<void(std::span<const std::uint32_t>)>& visit) const {
  Xoshiro256 rng(seed_, block);
  const auto n = static_cast<std::uint64_t>(n_);
  // Unbiased indices by Lemire's multiply-and-reject on chunks of one 64-bit output: four 16-bit
  // chunks when n is small (rejection probability < n / 2^16), else two 32-bit chunks. A rejected
  // chunk is skipped (chunks are independent, so the result stays uniform). The loop is
  // branch-free: every chunk is written and the cursor advances only on acceptance; chunks drawn
  // past the end of a resample are discarded.
  const unsigned bits = n_ <= 256 ? 16 : 32;
  const unsigned chunks = 64 / bits;
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  const std::uint64_t threshold = ((mask + 1) - n) % n;  // 2^bits mod n
  std::vector<std::uint32_t> idx(n_ + chunks);
  for (std::size_t r = 0; r < count; ++r) {
    std::size_t j = 0;
    while (j < n_) {
      std::uint64_t w = rng.next();
      for (unsigned c = 0; c < chunks; ++c, w >>= bits) {
        const std::uint64_t m = (w & mask) * n;
        idx[j] = static_cast<std::uint32_t>(m >> bits);
        j += (m & mask) >= threshold;
      }
    }
    visit(std::span<const std::uint32_t>(idx.data(), n_));
  }
}

Interval percentile_interval(std::vector<double>& thetas, double confidence, Alternative alternative) {
  return intervals_at(thetas, {interval_levels(confidence, alternative)})[0];
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
  const double z0 = bca_z0(thetas, estimate);
  if (z0_out) *z0_out = z0;
  if (!std::isfinite(z0) || !std::isfinite(acceleration)) return {};
  const auto levels = interval_levels(confidence, alternative);
  return intervals_at(thetas, {{bca_level(levels.first, z0, acceleration), bca_level(levels.second, z0, acceleration)}})[0];
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
  for_each_block(num_blocks, choose_threads(o.num_threads, n * o.resamples, num_blocks), [&](std::size_t b) {
    std::vector<std::uint32_t> counts(n, 0);
    const std::size_t first = b * ResampleStream::block_size;
    const std::size_t count = std::min(ResampleStream::block_size, o.resamples - first);
    std::size_t j = first;
    stream.draw_block(b, count, [&](std::span<const std::uint32_t> idx) {
      // Resampling rows of the sorted sample is the same bootstrap (the statistics ignore
      // order) and lets the counts index positions directly.
      means[j] = mean_of_indices(sorted, idx);
      for (auto i : idx) ++counts[i];
      std::size_t cumulative = 0, p = 0;
      // Skip whole blocks of counts first (the compiler vectorises the block sum): for large n
      // this scan, not the drawing, would otherwise dominate.
      constexpr std::size_t block = 32;
      while (p + block <= n) {
        std::uint32_t block_sum = 0;
        for (std::size_t k = 0; k < block; ++k) block_sum += counts[p + k];
        if (cumulative + block_sum > lo_rank) break;
        cumulative += block_sum;
        p += block;
      }
      while ((cumulative += counts[p]) <= lo_rank) ++p;
      const double lo = sorted[p];
      while (cumulative <= hi_rank) cumulative += counts[++p];
      medians[j] = lo + (h - static_cast<double>(lo_rank)) * (sorted[p] - lo);  // type-7, as quantile_sorted
      for (auto i : idx) counts[i] = 0;  // n stores; cheaper than clearing all n counts via memset
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

namespace layerbench::stats {

MeanMedianBootstrap normal_limit_mean_median(std::span<const double> x, double confidence) {
  MeanMedianBootstrap out;
  const std::size_t n = x.size();
  const auto t = t_test(x, confidence);
  out.mean.estimate = t.mean;
  out.mean.percentile = out.mean.bca = t.ci;
  out.mean.standard_error = t.se;
  std::vector<double> sorted(x.begin(), x.end());
  std::sort(sorted.begin(), sorted.end());
  out.median.estimate = quantile_sorted(sorted, 0.5);
  // Ranks n/2 -+ z sqrt(n)/2 (the binomial(n, 1/2) normal limit), 1-based, clipped to the sample.
  const double z = boost::math::quantile(boost::math::normal(), 0.5 + confidence / 2);
  const double half = z * std::sqrt(static_cast<double>(n)) / 2;
  const auto lo = static_cast<std::size_t>(std::clamp(std::floor(static_cast<double>(n) / 2 - half), 1.0, static_cast<double>(n)));
  const auto hi = static_cast<std::size_t>(std::clamp(std::ceil(static_cast<double>(n) / 2 + half) + 1, 1.0, static_cast<double>(n)));
  out.median.percentile = out.median.bca = Interval{sorted[lo - 1], sorted[hi - 1]};
  // The sd of the order statistic: the interval's half width over z.
  out.median.standard_error = (sorted[hi - 1] - sorted[lo - 1]) / (2 * z);
  return out;
}

}  // namespace layerbench::stats
