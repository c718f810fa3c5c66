#include "reports/profile.hpp"

#include "common/number_text.hpp"

#include "stats/bootstrap.hpp"
#include "stats/slope.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace layerbench::reports {
namespace {

bool is_part(const Measurement& m) { return m.role == Role::part || m.role == Role::communication; }

// The measurements of a group, with the parent of each part resolved (the group's total when
// `parent` is empty or names no measurement of the group).
struct Tree {
  std::vector<const Measurement*> ms;
  const Measurement* total = nullptr;

  Tree(const std::vector<Measurement>& all, const std::string& group) {
    for (const auto& m : all)
      if (m.group == group && !m.samples_ms.empty()) ms.push_back(&m);
    for (const auto* m : ms)
      if (m->role == Role::total && total == nullptr) total = m;
  }
  const Measurement* parent_of(const Measurement* m) const {
    if (!is_part(*m)) return nullptr;
    if (!m->parent.empty())
      for (const auto* p : ms)
        if (p != m && p->name == m->parent) return p;
    return total == m ? nullptr : total;
  }
  std::vector<const Measurement*> children(const Measurement* p) const {
    std::vector<const Measurement*> kids;
    for (const auto* m : ms)
      if (m != p && parent_of(m) == p) kids.push_back(m);
    return kids;
  }
  // Parents with parts, depth first from the total.
  void parents(const Measurement* p, std::vector<const Measurement*>& out, int depth = 0) const {
    const auto kids = children(p);
    if (kids.empty() || depth > 16) return;
    out.push_back(p);
    for (const auto* k : kids) parents(k, out, depth + 1);
  }
};

double per_instance_median(const Measurement& m) { return median_ms(m) / std::max(1, m.instances); }

// The excess sum(parts) - parent of medians per instance, with a 95% percentile-bootstrap
// interval (each measurement resampled on its own: they are separate runs). Beyond noise when
// the interval lies above 0; with fewer than 2 samples anywhere, the point value decides.
struct Excess {
  double value = 0;
  stats::Interval ci;
  bool beyond_noise = false;
};
Excess excess_of(const std::vector<const Measurement*>& parts, const Measurement& parent) {
  constexpr std::size_t kResamples = 4000;
  Excess e;
  e.value = -per_instance_median(parent);
  for (const auto* k : parts) e.value += per_instance_median(*k);
  bool enough = parent.samples_ms.size() >= 2;
  for (const auto* k : parts) enough = enough && k->samples_ms.size() >= 2;
  if (!enough) {
    e.beyond_noise = e.value > 0;
    return e;
  }
  auto resampled = [&](const Measurement& m, std::uint64_t seed) {
    std::vector<double> x = m.samples_ms;
    for (auto& v : x) v /= std::max(1, m.instances);
    return stats::resampled_medians(x, kResamples, seed);
  };
  std::vector<double> theta = resampled(parent, 0x70617274ULL);
  for (auto& t : theta) t = -t;
  std::uint64_t seed = 0x70617275ULL;
  for (const auto* k : parts) {
    const auto r = resampled(*k, seed++);
    for (std::size_t i = 0; i < theta.size(); ++i) theta[i] += r[i];
  }
  e.ci = stats::percentile_interval(theta, 0.95, stats::Alternative::two_sided);
  e.beyond_noise = e.ci.low > 0;
  return e;
}

std::string excess_text(const Excess& e) {
  if (!std::isfinite(e.ci.low)) return fmt_quantity_signed(e.value, Unit::ms);
  return fmt::format("{}, 95% CI {}", fmt_quantity_signed(e.value, Unit::ms), fmt_interval(e.ci.low, e.ci.high, Unit::ms));
}

}  // namespace

std::vector<std::string> groups_of(const std::vector<Measurement>& results) {
  std::vector<std::string> g;
  for (const auto& m : results)
    if (std::find(g.begin(), g.end(), m.group) == g.end()) g.push_back(m.group);
  return g;
}

std::string rate_text(const Measurement& m) { return rates_text(rates_of(m)); }

std::string rates_text(const Rates& r) {
  std::string out;
  if (std::isfinite(r.flop_per_s)) out = fmt_quantity(r.flop_per_s, Unit::flop_per_s);
  if (std::isfinite(r.busbw_bytes_per_s))
    out += (out.empty() ? "" : ", ") + fmt_quantity(r.algbw_bytes_per_s, Unit::bytes_per_s) + " alg / " +
           fmt_quantity(r.busbw_bytes_per_s, Unit::bytes_per_s) + " bus";
  else if (std::isfinite(r.algbw_bytes_per_s))
    out += (out.empty() ? "" : ", ") + fmt_quantity(r.algbw_bytes_per_s, Unit::bytes_per_s);
  return out;
}

Composition composition(const std::vector<Measurement>& all, const std::string& group, const std::string& title,
                        const ExtraColumns& extra) {
  const Tree tree(all, group);
  Composition c;
  c.table.title = title;
  c.table.headers = {"component", "role", "median", "min", "max", "share of parent", "rate"};
  const bool with_energy =
      std::any_of(tree.ms.begin(), tree.ms.end(), [](const Measurement* m) { return m->energy.present(); });
  if (with_energy) c.table.headers.push_back("energy J per instance / mean W per device");
  c.table.headers.insert(c.table.headers.end(), extra.headers.begin(), extra.headers.end());
  c.table.align = {Align::left, Align::left};
  const std::vector<std::string> blanks(extra.headers.size());
  auto row = [&](const Measurement* m, int depth, double parent_ms) {
    const auto s = stats::summarize(m->samples_ms);
    const double inst = std::max(1, m->instances);
    const double med = s.median / inst;
    std::string share = "—";
    if (is_part(*m) && parent_ms > 0) share = fmt_share(med / parent_ms);
    std::string name = std::string(static_cast<std::size_t>(2 * std::max(0, depth - 1)), ' ') +
                       (depth > 0 ? "└ " : "") + m->name;
    if (m->instances > 1) name += fmt::format(" (per instance, x{})", m->instances);
    std::vector<std::string> cells = {name, to_string(m->role), fmt_time(med), fmt_time(s.min / inst),
                                      fmt_time(s.max / inst), share, rate_text(*m)};
    if (with_energy)
      cells.push_back(m->energy.present() ? fmt::format("{} / {}", fmt_sig(m->energy.per_instance_j(m->instances), 3),
                                                         fmt_sig(m->energy.mean_w(), 3))
                                          : text::kNotAvailable);
    if (extra.cells) {
      auto more = extra.cells(*m);
      more.resize(extra.headers.size());
      cells.insert(cells.end(), more.begin(), more.end());
    }
    c.table.add_row(std::move(cells));
  };
  // Depth-first from the total: each parent, its parts, then its "other / unaccounted".
  auto walk = [&](auto&& self, const Measurement* p, int depth) -> void {
    const double pm = per_instance_median(*p);
    const auto kids = tree.children(p);
    double sum = 0;
    for (const auto* k : kids) {
      row(k, depth + 1, pm);
      const double km = per_instance_median(*k);
      sum += km;
      if (km > pm) {
        const auto ex = excess_of({k}, *p);
        if (ex.beyond_noise)
          c.warnings.push_back(fmt::format(
              "{} ({}) exceeds its parent {} ({}) by {}: each is timed on its own, so this is work that overlaps "
              "inside the parent (or noise beyond the samples' own)",
              k->name, fmt_time(km), p->name, fmt_time(pm), excess_text(ex)));
      }
      if (depth < 16) self(self, k, depth + 1);
    }
    if (kids.empty()) return;
    const double other = pm - sum;
    std::vector<std::string> cells = {
        std::string(static_cast<std::size_t>(2 * depth), ' ') + "└ other / unaccounted", "remainder",
        fmt_quantity_signed(other, Unit::ms), "", "", pm > 0 ? fmt_share_signed(other / pm) : "—", ""};
    if (with_energy) cells.emplace_back();
    cells.insert(cells.end(), blanks.begin(), blanks.end());
    c.table.add_row(std::move(cells));
    // Only an excess beyond the noise of the parts and the parent is reported: parts that sum to
    // 100.0-100.7% of a parent within their intervals are a remainder of about zero.
    if (other < 0) {
      const auto ex = excess_of(kids, *p);
      if (ex.beyond_noise)
        c.warnings.push_back(fmt::format(
            "the parts of {} sum to {} = {} of it, an excess of {}: parts timed alone overlap inside it, so its "
            "remainder is negative",
            p->name, fmt_time(sum), fmt_share(pm > 0 ? sum / pm : 0), excess_text(ex)));
    }
  };
  if (tree.total != nullptr) {
    row(tree.total, 0, 0);
    walk(walk, tree.total, 0);
  }
  // Parts whose parent is not in the group, then everything that is not part of the composition.
  for (const auto* m : tree.ms)
    if (m != tree.total && is_part(*m) && tree.parent_of(m) == nullptr) row(m, 0, 0);
  for (const auto* m : tree.ms)
    if (m != tree.total && !is_part(*m)) row(m, 0, 0);
  return c;
}

svg::BarChart composition_chart(const std::vector<Measurement>& all, const std::string& group,
                                const std::string& title) {
  const Tree tree(all, group);
  svg::BarChart ch;
  ch.title = title;
  ch.category_label = "measurement";
  ch.horizontal = true;
  if (tree.total == nullptr) return ch;
  std::vector<const Measurement*> parents;
  tree.parents(tree.total, parents);
  // One time unit for the whole chart, chosen for the total (ms, µs or s).
  const double total_ms = per_instance_median(*tree.total);
  double scale = 1;
  std::string unit = "ms";
  if (total_ms < 1) {
    scale = 1e3;
    unit = "µs";
  } else if (total_ms >= 1000) {
    scale = 1e-3;
    unit = "s";
  }
  ch.value = {"median time", unit};
  ch.value.include_zero = true;
  for (const auto* p : parents)
    for (const auto* k : tree.children(p))
      if (std::find(ch.segments.begin(), ch.segments.end(), k->name) == ch.segments.end())
        ch.segments.push_back(k->name);
  ch.segments.push_back("other / unaccounted");
  for (const auto* p : parents) {
    std::vector<double> v(ch.segments.size(), 0.0);
    double sum = 0;
    for (const auto* k : tree.children(p)) {
      const auto i = static_cast<std::size_t>(std::find(ch.segments.begin(), ch.segments.end(), k->name) -
                                              ch.segments.begin());
      v[i] = per_instance_median(*k) * scale;
      sum += per_instance_median(*k);
    }
    const double pm = per_instance_median(*p);
    v.back() = std::max(0.0, pm - sum) * scale;
    ch.categories.push_back(p->name);
    ch.values.push_back(std::move(v));
    ch.value_labels.push_back(fmt_time(pm) + (sum > pm ? " (parts exceed it)" : ""));
  }
  return ch;
}

}  // namespace layerbench::reports
