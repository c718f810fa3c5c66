#include "moe/expert_buckets.hpp"

#include <algorithm>

namespace layerbench::moe {

ExpertBuckets plan_expert_buckets(std::span<const int> counts) {
  ExpertBuckets p;
  p.base.assign(counts.size(), 0);
  for (std::size_t e = 0; e < counts.size(); ++e)
    if (counts[e] > 0) p.order.push_back(static_cast<int>(e));
  std::stable_sort(p.order.begin(), p.order.end(), [&](int a, int b) { return counts[a] > counts[b]; });
  for (std::size_t i = 0; i < p.order.size();) {
    const std::int64_t cap = (std::int64_t{counts[p.order[i]]} + 7) / 8 * 8;
    // The expert that sets the capacity always joins (do-while); the rest join while they fill
    // at least 3/4 of a slot.
    std::size_t j = i;
    do {
      p.base[p.order[j]] = p.rows;
      p.rows += cap;
      ++j;
    } while (j < p.order.size() && 4 * std::int64_t{counts[p.order[j]]} >= 3 * cap);
    p.buckets.push_back({i, j - i, cap});
    i = j;
  }
  return p;
}

std::int64_t expert_tile_count(std::span<const int> counts, std::span<const int> order, std::int64_t rows) {
  std::int64_t n = 0;
  for (int e : order) n += (std::int64_t{counts[e]} + rows - 1) / rows;
  return n;
}

void fill_expert_tiles(std::span<const int> counts, std::span<const std::int64_t> base, std::span<const int> order,
                       std::span<ExpertTile> out, std::int64_t rows) {
  std::size_t t = 0;
  for (int e : order)
    for (std::int64_t r = 0; r < counts[e]; r += rows)
      out[t++] = {base[e] + r, e, static_cast<int>(std::min<std::int64_t>(rows, counts[e] - r))};
}

}  // namespace layerbench::moe
