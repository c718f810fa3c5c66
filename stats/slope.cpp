#include "stats/slope.hpp"

#include <algorithm>
#include <boost/math/distributions/fisher_f.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <stdexcept>

namespace layerbench::stats {
namespace {

template <class F>
void for_each_resample(std::size_t n, std::size_t resamples, std::uint64_t seed, F&& visit) {
  const ResampleStream stream(seed, n);
  for (std::size_t b = 0; b * ResampleStream::block_size < resamples; ++b) {
    const std::size_t count = std::min(ResampleStream::block_size, resamples - b * ResampleStream::block_size);
    stream.draw_block(b, count, visit);
  }
}

}  // namespace

BlockSlopeFit fit_block_slope(std::span<const double> x, std::span<const double> y,
                              std::span<const std::size_t> block, std::span<const std::size_t> level,
                              const BlockSlopeOptions& o) {
  const std::size_t n = x.size();
  if (y.size() != n || block.size() != n || level.size() != n) throw std::invalid_argument("lengths differ");
  if (!(o.confidence > 0 && o.confidence < 1)) throw std::invalid_argument("confidence must be in (0, 1)");
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) throw std::invalid_argument("non-finite observation");
  BlockSlopeFit f;
  f.n = n;
  f.blocks = n ? *std::max_element(block.begin(), block.end()) + 1 : 0;
  f.levels = n ? *std::max_element(level.begin(), level.end()) + 1 : 0;
  if (f.blocks < 2) throw std::invalid_argument("need at least 2 blocks");

  std::vector<double> bx(f.blocks, 0), by(f.blocks, 0), bn(f.blocks, 0);
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < n; ++i) {
    bx[block[i]] += x[i];
    by[block[i]] += y[i];
    bn[block[i]] += 1;
    mx += x[i];
    my += y[i];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  std::vector<double> xc(n), yc(n), sxy(f.blocks, 0), sxx(f.blocks, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = block[i];
    xc[i] = x[i] - bx[b] / bn[b];
    yc[i] = y[i] - by[b] / bn[b];
    sxy[b] += xc[i] * yc[i];
    sxx[b] += xc[i] * xc[i];
  }
  double Sxy = 0, Sxx = 0;
  for (std::size_t b = 0; b < f.blocks; ++b) {
    Sxy += sxy[b];
    Sxx += sxx[b];
  }
  if (!(Sxx > 0)) throw std::invalid_argument("the dose does not vary within blocks");
  f.slope = Sxy / Sxx;
  f.intercept = my - f.slope * mx;

  double sse = 0;
  for (std::size_t i = 0; i < n; ++i) sse += std::pow(yc[i] - f.slope * xc[i], 2);
  f.df = static_cast<double>(n) - static_cast<double>(f.blocks) - 1;
  const double alpha = 1 - o.confidence;
  if (f.df > 0) {
    f.residual_sd = std::sqrt(sse / f.df);
    f.se = f.residual_sd / std::sqrt(Sxx);
    const double q = boost::math::quantile(boost::math::students_t(f.df), 1 - alpha / 2);
    f.t_ci = {f.slope - q * f.se, f.slope + q * f.se};
  }

  // Over blocks: each block's residual score sxy_b - slope * sxx_b (CR1 small-sample factor);
  // with the same doses in every block this is sd(block slopes) / sqrt(blocks).
  {
    const auto B = static_cast<double>(f.blocks);
    double u2 = 0;
    for (std::size_t b = 0; b < f.blocks; ++b) u2 += std::pow(sxy[b] - f.slope * sxx[b], 2);
    f.block_se = std::sqrt(B / (B - 1) * u2) / Sxx;
    const double q = boost::math::quantile(boost::math::students_t(B - 1), 1 - alpha / 2);
    f.block_t_ci = {f.slope - q * f.block_se, f.slope + q * f.block_se};
  }

  // Linearity: block-adjusted level means (centred data + overall mean) against the line.
  std::vector<double> lx(f.levels, 0), ly(f.levels, 0), ln(f.levels, 0);
  for (std::size_t i = 0; i < n; ++i) {
    lx[level[i]] += xc[i];
    ly[level[i]] += yc[i];
    ln[level[i]] += 1;
  }
  double ss_lof = 0;
  std::size_t used_levels = 0;
  f.max_abs_residual = 0;
  for (std::size_t l = 0; l < f.levels; ++l) {
    if (ln[l] == 0) continue;
    ++used_levels;
    const double cx = lx[l] / ln[l], cy = ly[l] / ln[l];
    const double r = cy - f.slope * cx;
    f.level_x.push_back(cx + mx);
    f.level_y.push_back(cy + my);
    f.level_residual.push_back(r);
    f.max_abs_residual = std::max(f.max_abs_residual, std::abs(r));
    ss_lof += ln[l] * r * r;
  }
  const double df_pe = static_cast<double>(n) - static_cast<double>(f.blocks) - static_cast<double>(used_levels) + 1;
  if (used_levels >= 3 && df_pe > 0) {
    const double df_lof = static_cast<double>(used_levels) - 2;
    const double ss_pe = std::max(sse - ss_lof, 0.0);
    if (ss_pe > 0) {
      f.lack_of_fit_f = (ss_lof / df_lof) / (ss_pe / df_pe);
      f.lack_of_fit_p = boost::math::cdf(boost::math::complement(boost::math::fisher_f(df_lof, df_pe), f.lack_of_fit_f));
    }
  }

  // Bootstrap over whole blocks: each block's centred sums are fixed, a resample adds them up.
  std::vector<double> thetas;
  thetas.reserve(o.resamples);
  for_each_resample(f.blocks, o.resamples, o.seed, [&](std::span<const std::uint32_t> idx) {
    double a = 0, b = 0;
    for (auto k : idx) {
      a += sxy[k];
      b += sxx[k];
    }
    thetas.push_back(b > 0 ? a / b : f.slope);
  });
  if (o.keep_resamples) f.resampled = thetas;
  f.ci = percentile_interval(thetas, o.confidence, Alternative::two_sided);
  return f;
}

double median_block_slope(std::span<const double> x, std::span<const double> y, std::span<const std::size_t> block) {
  const std::size_t n = x.size();
  if (y.size() != n || block.size() != n) throw std::invalid_argument("lengths differ");
  const std::size_t blocks = n ? *std::max_element(block.begin(), block.end()) + 1 : 0;
  std::vector<double> sx(blocks, 0), sy(blocks, 0), cnt(blocks, 0);
  for (std::size_t i = 0; i < n; ++i) {
    sx[block[i]] += x[i];
    sy[block[i]] += y[i];
    cnt[block[i]] += 1;
  }
  std::vector<double> sxy(blocks, 0), sxx(blocks, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = block[i];
    const double dx = x[i] - sx[b] / cnt[b];
    sxy[b] += dx * (y[i] - sy[b] / cnt[b]);
    sxx[b] += dx * dx;
  }
  std::vector<double> slopes;
  for (std::size_t b = 0; b < blocks; ++b)
    if (sxx[b] > 0) slopes.push_back(sxy[b] / sxx[b]);
  if (slopes.empty()) return nan_value;
  std::sort(slopes.begin(), slopes.end());
  const std::size_t h = slopes.size() / 2;
  return slopes.size() % 2 ? slopes[h] : 0.5 * (slopes[h - 1] + slopes[h]);
}

Interval product_interval(std::span<const double> a, std::span<const double> b, double confidence) {
  if (a.size() != b.size() || a.empty()) throw std::invalid_argument("product_interval: lengths differ or empty");
  std::vector<double> p(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) p[i] = a[i] * b[i];
  return percentile_interval(p, confidence, Alternative::two_sided);
}

std::vector<double> resampled_medians(std::span<const double> x, std::size_t resamples, std::uint64_t seed) {
  if (x.empty()) throw std::invalid_argument("resampled_medians: no data");
  std::vector<double> out, tmp(x.size());
  out.reserve(resamples);
  for_each_resample(x.size(), resamples, seed, [&](std::span<const std::uint32_t> idx) {
    for (std::size_t i = 0; i < idx.size(); ++i) tmp[i] = x[idx[i]];
    const std::size_t h = tmp.size() / 2;
    std::nth_element(tmp.begin(), tmp.begin() + static_cast<std::ptrdiff_t>(h), tmp.end());
    double m = tmp[h];
    if (tmp.size() % 2 == 0) m = (m + *std::max_element(tmp.begin(), tmp.begin() + static_cast<std::ptrdiff_t>(h))) / 2;
    out.push_back(m);
  });
  return out;
}

}  // namespace layerbench::stats
