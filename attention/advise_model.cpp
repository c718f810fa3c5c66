#include "attention/advise_model.hpp"

#include "collectives/error.hpp"
#include "reports/document.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace layerbench::attention {

using reports::maxed;
using reports::scaled;

void check_collectives(const Topology& t, const Problem& p, const CollModel& coll) {
  LocalTimes placeholder;
  placeholder.attention = placeholder.merge = placeholder.pad_pack = {1, 1, 1};
  (void)predict(t, p, placeholder, coll, 0.0);
}

Prediction predict(const Topology& t, const Problem& p, const LocalTimes& local, const CollModel& coll, double margin) {
  Prediction pr;
  pr.label = t.label;
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
  pr.total = reports::widened(pr.total, margin);
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

std::string advice_markdown(const std::string& title, std::vector<Prediction> preds, double margin) {
  preds = reports::ranked(std::move(preds));
  std::string md = reports::to_markdown(advice_section(title, preds), 3);
  md += reports::notes_markdown("How the communication was obtained", preds);
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
