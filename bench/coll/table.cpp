// The nccl-tests-like text table.
#include "bench/coll/sweep.hpp"

#include "stats/summary.hpp"

#include <fmt/format.h>

#include <map>
#include <tuple>

namespace layerbench::coll {

std::string format_table(const Config& c, const SweepResult& r) {
  std::string out;
  const bool link = c.link_gbps > 0;
  out += fmt::format("# {:>22} {:>12} {:>6}  | {:^48} | {:^48}\n", "", "", "", "out-of-place", "in-place");
  const std::string cols = link ? fmt::format("{:>9} {:>8} {:>8} {:>6} {:>6} {:>8}", "time(us)", "algbw", "busbw", "%link", "#wrong", "agg(us)")
                                : fmt::format("{:>9} {:>8} {:>8} {:>6} {:>8}", "time(us)", "algbw", "busbw", "#wrong", "agg(us)");
  out += fmt::format("# {:<22} {:>12} {:>6}  | {:<48} | {:<48}\n", "op", "size(B)", "type", cols, cols);
  // Pair out-of-place and in-place rows of the same (op, bytes).
  using Key = std::tuple<std::string, std::uint64_t, std::string>;
  std::map<Key, std::pair<const reports::Measurement*, const reports::Measurement*>> rows;
  std::vector<Key> order;
  for (const auto& m : r.results) {
    Key k{m.name, m.params.value("bytes", std::uint64_t{0}), m.params.value("dtype", std::string{})};
    if (!rows.count(k)) order.push_back(k);
    auto& slot = rows[k];
    (m.params.value("in_place", false) ? slot.second : slot.first) = &m;
  }
  auto cell = [&](const reports::Measurement* m) {
    if (!m) return fmt::format("{:<48}", link ? "      N/A" : "      N/A");
    const auto& x = m->metrics;
    const double t = x.value("time_us", 0.0);
    if (!x.contains("busbw_gbps"))
      return fmt::format("{:>9.2f} {:>8} {:>8} {:>6} {:>8}", t, "-", "-", x.value("wrong", 0.0), "-");
    if (link)
      return fmt::format("{:>9.2f} {:>8.2f} {:>8.2f} {:>6.1f} {:>6} {:>8.2f}", t, x.value("algbw_gbps", 0.0),
                         x.value("busbw_gbps", 0.0), x.value("pct_link", 0.0), x.value("wrong", 0.0),
                         x.value("agg_time_us", 0.0));
    return fmt::format("{:>9.2f} {:>8.2f} {:>8.2f} {:>6} {:>8.2f}", t, x.value("algbw_gbps", 0.0),
                       x.value("busbw_gbps", 0.0), x.value("wrong", 0.0), x.value("agg_time_us", 0.0));
  };
  for (const auto& k : order) {
    const auto& [a, b] = rows[k];
    out += fmt::format("  {:<22} {:>12} {:>6}  | {:<48} | {:<48}\n", std::get<0>(k), std::get<1>(k), std::get<2>(k),
                       cell(a), cell(b));
  }
  out += fmt::format("# time: median of per-iteration rank-max samples; agg: nccl-tests-style host-clock mean of "
                     "back-to-back ops (rank-max); bandwidth in GB/s (1e9 B/s)\n");
  out += fmt::format("# out of bounds values : {} {}\n", r.total_wrong, r.total_wrong ? "ERROR" : "OK");
  return out;
}

}  // namespace layerbench::coll
