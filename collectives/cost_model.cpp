#include "collectives/cost_model.hpp"
#include "common/json_text.hpp"

#include "common/usage.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace layerbench {

using reports::Interval;

double bus_factor(const std::string& op, int n) {
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  return static_cast<double>(n - 1) / n;
}

void CollModel::add(const reports::ResultFile& f) {
  // Strict: a sweep of another tool, a size or a time that is not a finite number >= 0 is refused
  // naming the file and the key, never dropped from the model.
  if (!f.binary.empty() && f.binary != "layerbench-coll")
    throw UsageError(fmt::format("{}: not a layerbench-coll sweep (written by {})", f.path, f.binary));
  const auto& gs = f.config.contains("group_size") ? f.config["group_size"] : nlohmann::json();
  if (!gs.is_number_integer() || gs.get<std::int64_t>() < 2 || gs.get<std::int64_t>() > (1 << 20))
    throw UsageError(fmt::format("{}: not a layerbench-coll sweep of a group of >= 2 ranks (config.group_size {})",
                                 f.path, gs.is_null() ? "missing" : json_text(gs)));
  const int g = gs.get<int>();
  for (std::size_t i = 0; i < f.results.size(); ++i) {
    const auto& m = f.results[i];
    for (std::size_t k = 0; k < m.samples_ms.size(); ++k)
      if (!std::isfinite(m.samples_ms[k]) || m.samples_ms[k] < 0)
        throw UsageError(fmt::format("{}: results[{}].samples_ms[{}] = {}: a time must be a finite number >= 0", f.path,
                                     i, k, m.samples_ms[k]));
    if (!m.params.contains("bytes") || m.params.value("in_place", false) || m.samples_ms.empty()) continue;
    const auto& b = m.params["bytes"];
    if (!b.is_number() || !std::isfinite(b.get<double>()) || b.get<double>() < 0)
      throw UsageError(fmt::format("{}: results[{}].params.bytes = {}: a size must be a number >= 0", f.path, i, json_text(b)));
    sweeps_[{m.name, g}].push_back({b.get<double>(), reports::interval_of(m)});
  }
  for (auto& [key, pts] : sweeps_)
    std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.bytes < b.bytes; });
  files_.push_back(f.path);
}

bool CollModel::has(const std::string& op) const { return !group_sizes(op).empty(); }

std::vector<int> CollModel::group_sizes(const std::string& op) const {
  std::vector<int> out;
  for (const auto& [key, v] : sweeps_)
    if (key.first == op && !v.empty()) out.push_back(key.second);
  return out;
}

Interval CollModel::time(const std::string& op, double bytes, int n, std::string* how) const {
  if (n <= 1 || bytes <= 0) return {};
  // The sweep of this op at n ranks, else the nearest group size (through bus bandwidth).
  const std::vector<Point>* pts = nullptr;
  int g = 0;
  for (const auto& [key, v] : sweeps_)
    if (key.first == op && (pts == nullptr || std::abs(key.second - n) < std::abs(g - n))) {
      pts = &v;
      g = key.second;
    }
  if (pts == nullptr || pts->empty())
    throw UsageError(fmt::format("no layerbench-coll sweep of {} among --coll files (needed for {} ranks)", op, n));
  if (g != n && !rescale)
    throw UsageError(fmt::format("no {} sweep of {} ranks among the layerbench-coll files (sweeps of {} ranks): sweep "
                                 "that group size (mpirun -n {} layerbench-coll), or pass --coll-rescale to scale the "
                                 "nearest sweep through its bus bandwidth (said in the advice)",
                                 op, n, fmt::join(group_sizes(op), ", "), n));
  const auto& p = *pts;
  Interval t;
  if (bytes <= p.front().bytes) {
    t = p.front().t;  // latency floor
  } else if (bytes >= p.back().bytes) {
    t = reports::scaled(p.back().t, bytes / p.back().bytes);  // constant bandwidth
  } else {
    const auto hi = std::upper_bound(p.begin(), p.end(), bytes, [](double b, const Point& x) { return b < x.bytes; });
    const auto lo = hi - 1;
    const double f = std::log(bytes / lo->bytes) / std::log(hi->bytes / lo->bytes);
    auto lerp = [&](double a, double b) { return std::exp(std::log(a) + f * (std::log(b) - std::log(a))); };
    t = {lerp(lo->t.median, hi->t.median), lerp(lo->t.lo, hi->t.lo), lerp(lo->t.hi, hi->t.hi)};
  }
  if (g != n) t = reports::scaled(t, bus_factor(op, n) / bus_factor(op, g));
  if (how)
    *how = g == n ? fmt::format("{} on {} ranks: the {}-rank sweep", op, n, g)
                  : fmt::format("{} on {} ranks: from the {}-rank sweep through its bus bandwidth (x{:.3f})", op, n, g,
                                bus_factor(op, n) / bus_factor(op, g));
  return t;
}

Interval CollModel::p2p(double bytes, std::string* how) const {
  const Interval t = time("all_to_all", 2 * bytes, 2, how);
  if (how) *how = "ring step: a 2-rank all_to_all of 2M bytes (M each way); " + *how;
  return t;
}

int ClusterCollModel::nodes_spanned(int n, int stride) const {
  const long long span = static_cast<long long>(n - 1) * stride + 1;  // ranks from the first member to the last
  return static_cast<int>((span + gpus_per_node - 1) / gpus_per_node);
}

Interval ClusterCollModel::time(const std::string& op, double bytes, int n, int stride, std::string* how) const {
  if (n <= 1 || bytes <= 0) return {};
  const int nodes = nodes_spanned(n, stride);
  std::string h;
  Interval t;
  if (nodes <= 1) {
    t = intra.time(op, bytes, n, &h);
    h += " (intra-node sweep)";
  } else if (!inter.empty()) {
    t = inter.time(op, bytes, n, &h);
    h += fmt::format(" (inter-node sweep; the group spans {} nodes)", nodes);
  } else if (link.given()) {
    // The traffic that leaves a GPU's node: all_to_all sends (n - n/nodes)/n of its buffer off the
    // node; all_gather receives that share of the output; all_reduce (ring) moves 2(n-1)/n of it.
    const double local = static_cast<double>(n) / nodes;
    const double share = op == "all_reduce" ? bus_factor(op, n) : (n - local) / n;
    const double ms = link.latency_us * 1e-3 + bytes * share / (link.gbps * 1e9) * 1e3;
    t = {ms, ms, ms};
    h = fmt::format("{} on {} ranks over {} nodes: ASSUMED link {:g} GB/s per GPU, {:g} us latency "
                    "(--inter-gbps/--inter-latency-us; no interval of its own)",
                    op, n, nodes, link.gbps, link.latency_us);
  } else {
    throw UsageError(fmt::format("a {}-rank {} group spans {} nodes of {} GPUs: the --coll sweep (one node) cannot be "
                                 "rescaled across nodes; give --coll-inter FILE (a layerbench-coll sweep over nodes) "
                                 "or an assumed link (--inter-gbps GBPS [--inter-latency-us US])",
                                 n, op, nodes, gpus_per_node));
  }
  if (how) *how = h;
  return t;
}

}  // namespace layerbench
