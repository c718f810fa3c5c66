#include "bench/attn/advise_model.hpp"

#include "collectives/error.hpp"
#include "reports/document.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace layerbench::attention {

Interval interval_of(const reports::Measurement& m) {
  LB_CHECK(!m.samples_ms.empty(), "a measurement without samples");
  const auto s = stats::summarize(m.samples_ms);
  return {s.median, s.p10, s.p90};
}

namespace {

// nccl-tests bus factor of an op on n ranks.
double bus_factor(const std::string& op, int n) {
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  return static_cast<double>(n - 1) / n;
}

Interval scaled(const Interval& t, double f) { return {t.median * f, t.lo * f, t.hi * f}; }

Interval maxed(const Interval& a, const Interval& b) {
  return {std::max(a.median, b.median), std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
}

}  // namespace

void CollModel::add(const reports::ResultFile& f) {
  const int g = f.config.value("group_size", 0);
  if (g < 2) throw UsageError(fmt::format("{}: not a layerbench-coll sweep of a group of >= 2 ranks", f.path));
  for (const auto& m : f.results) {
    if (!m.params.contains("bytes") || m.params.value("in_place", false) || m.samples_ms.empty()) continue;
    sweeps_[{m.name, g}].push_back({m.params["bytes"].get<double>(), interval_of(m)});
  }
  for (auto& [key, pts] : sweeps_)
    std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.bytes < b.bytes; });
  files_.push_back(f.path);
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
  const auto& p = *pts;
  Interval t;
  if (bytes <= p.front().bytes) {
    t = p.front().t;  // latency floor
  } else if (bytes >= p.back().bytes) {
    t = scaled(p.back().t, bytes / p.back().bytes);  // constant bandwidth
  } else {
    const auto hi = std::upper_bound(p.begin(), p.end(), bytes, [](double b, const Point& x) { return b < x.bytes; });
    const auto lo = hi - 1;
    const double f = std::log(bytes / lo->bytes) / std::log(hi->bytes / lo->bytes);
    auto lerp = [&](double a, double b) { return std::exp(std::log(a) + f * (std::log(b) - std::log(a))); };
    t = {lerp(lo->t.median, hi->t.median), lerp(lo->t.lo, hi->t.lo), lerp(lo->t.hi, hi->t.hi)};
  }
  if (g != n) t = scaled(t, bus_factor(op, n) / bus_factor(op, g));
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

Prediction predict(const Topology& t, const Problem& p, const LocalTimes& local, const CollModel& coll, double margin) {
  Prediction pr;
  pr.topology = t;
  const double e = static_cast<double>(dtype_size(p.dtype));
  const int hpad = t.padded_heads(p.heads);
  const int hl = hpad / t.ulysses, hkvl = (p.kv() == p.heads ? hpad : p.kv()) / t.ulysses;
  const double row_q = e * static_cast<double>(p.batch) * hl * p.head_dim;
  const double row_kv = e * static_cast<double>(p.batch) * hkvl * p.head_dim;
  const auto shards = shard_lengths(t, p.seq);
  const double widest = static_cast<double>(*std::max_element(shards.begin(), shards.end()));
  const double region = static_cast<double>(p.seq / t.regions());
  const double a2a_rows = std::max(t.ulysses * widest, region);
  const double block = region * t.allgather;
  auto add = [&](const std::string& name, const Interval& x) {
    if (x.median > 0) pr.parts.emplace_back(name, x);
  };
  auto note = [&](const std::string& how) {
    if (!how.empty() && std::find(pr.notes.begin(), pr.notes.end(), how) == pr.notes.end()) pr.notes.push_back(how);
  };
  std::string how;
  if (t.uaa && t.ulysses > 1) {
    if (local.length_exchange) {
      add("length_exchange", *local.length_exchange);
    } else {
      add("length_exchange", coll.time("all_gather", 8.0 * t.ulysses, t.ulysses, &how));
      note("length_exchange: the smallest all_gather; the host read is not in the sweep");
    }
  }
  add("pad_pack", local.pad_pack);
  if (t.ulysses > 1) {
    Interval a2a = coll.time("all_to_all", row_q * a2a_rows, t.ulysses, &how);
    note(how);
    a2a += scaled(coll.time("all_to_all", row_kv * a2a_rows, t.ulysses), 2.0);
    add("qkv_all_to_all", a2a);
  }
  if (t.allgather > 1) {
    add("kv_all_gather", scaled(coll.time("all_gather", row_kv * block, t.allgather, &how), 2.0));
    note(how);
  }
  if (t.ring > 1) {
    const Interval step_p2p = coll.p2p(2 * row_kv * block, &how);
    note(how);
    Interval overlapped;
    for (int s = 0; s < t.ring; ++s) {
      const Interval c = local.step.size() == static_cast<std::size_t>(t.ring) ? local.step[static_cast<std::size_t>(s)]
                                                                                : scaled(local.attention, 1.0 / t.ring);
      overlapped += s + 1 < t.ring ? maxed(c, step_p2p) : c;
    }
    if (local.step.size() == static_cast<std::size_t>(t.ring)) overlapped += local.merge;  // after the last step
    add("attention + ring_p2p (overlapped)", overlapped);
  } else {
    add("attention", local.attention);
  }
  if (t.ulysses > 1) {
    Interval rev = coll.time("all_to_all", row_q * a2a_rows, t.ulysses);
    if (p.text_tokens > 0) rev += coll.time("all_gather", row_q * static_cast<double>(p.text_tokens) * t.ulysses, t.ulysses);
    add("reverse_all_to_all", rev);
  }
  for (const auto& [name, x] : pr.parts) pr.total += x;
  pr.total.lo -= margin * pr.total.median;
  pr.total.hi += margin * pr.total.median;
  return pr;
}

std::map<std::string, LocalTimes> local_times_from(const reports::ResultFile& f) {
  std::map<std::string, LocalTimes> out;
  for (const auto& m : f.results) {
    if (m.samples_ms.empty()) continue;
    auto& lt = out[m.group];
    lt.source = f.path;
    if (m.name == "attention") lt.attention = interval_of(m);
    if (m.name == "pad_pack") lt.pad_pack = interval_of(m);
    if (m.name == "length_exchange") lt.length_exchange = interval_of(m);
  }
  return out;
}

namespace {
// Fastest predicted median first.
std::vector<Prediction> ranked(std::vector<Prediction> preds) {
  std::sort(preds.begin(), preds.end(),
            [](const Prediction& a, const Prediction& b) { return a.total.median < b.total.median; });
  return preds;
}
}  // namespace

reports::Section advice_section(const std::string& title, std::vector<Prediction> preds) {
  preds = ranked(std::move(preds));
  reports::Table t;
  t.headers = {"rank", "topology", "predicted forward ms", "interval ms", "half-width", "vs fastest", "parts (median ms)"};
  t.align.assign(t.headers.size(), reports::Align::left);
  for (std::size_t i = 0; i < preds.size(); ++i) {
    const auto& p = preds[i];
    std::string parts;
    for (const auto& [name, x] : p.parts) parts += fmt::format("{}{} {:.3f}", parts.empty() ? "" : "; ", name, x.median);
    const auto& best = preds.front().total;
    const bool resolved = i > 0 && best.hi < p.total.lo;
    t.add_row({fmt::format("{}", i + 1), p.topology.label, fmt::format("{:.3f}", p.total.median),
               fmt::format("[{:.3f}, {:.3f}]", p.total.lo, p.total.hi),
               fmt::format("±{:.1f}%", 50.0 * (p.total.hi - p.total.lo) / p.total.median),
               i == 0 ? std::string("fastest predicted")
                      : fmt::format("{:+.1f}% ({})", 100.0 * (p.total.median / best.median - 1),
                                    resolved ? "resolved: intervals apart" : "not resolved: intervals overlap"),
               parts});
  }
  reports::Section s;
  s.title = title + " (PREDICTION, not a measurement)";
  s.tables.push_back(std::move(t));
  return s;
}

std::string advice_markdown(const std::string& title, std::vector<Prediction> preds, double margin) {
  preds = ranked(std::move(preds));
  std::string md = reports::to_markdown(advice_section(title, preds), 3);
  std::vector<std::string> notes;
  for (const auto& p : preds)
    for (const auto& n : p.notes)
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
  md += "How the communication was obtained:\n";
  for (const auto& n : notes) md += "- " + n + "\n";
  md += fmt::format(
      "\nInterval: sum of the parts' p10 .. p90, widened by ±{:.0f}% of the median (clock drift under the power cap "
      "between the parts' timings and a forward's, launch gaps).\n"
      "What this model cannot see: whether each group's ranks share NVLink or cross the network (the sweep's "
      "placement is assumed for every group); contention between groups communicating at once (each collective is "
      "costed alone); the ring transfer's slow-down of the attention it overlaps (taken as max, not sum); GPUs other "
      "than the one timed.\n",
      100 * margin);
  return md;
}

}  // namespace layerbench::attention
