#include "reports/profile.hpp"

#include "stats/summary.hpp"

#include <fmt/format.h>

#include <cmath>
#include <functional>

namespace layerbench::reports {

std::string rate_text(const Measurement& m) {
  const Rates r = rates_of(m);
  std::string out;
  if (std::isfinite(r.flop_per_s)) out = fmt_quantity(r.flop_per_s, Unit::flop_per_s);
  if (std::isfinite(r.busbw_bytes_per_s))
    out += (out.empty() ? "" : ", ") + fmt_quantity(r.algbw_bytes_per_s, Unit::bytes_per_s) + " alg / " +
           fmt_quantity(r.busbw_bytes_per_s, Unit::bytes_per_s) + " bus";
  else if (std::isfinite(r.algbw_bytes_per_s))
    out += (out.empty() ? "" : ", ") + fmt_quantity(r.algbw_bytes_per_s, Unit::bytes_per_s);
  return out;
}

Composition composition(const std::vector<Measurement>& all, const std::string& group, const std::string& title) {
  std::vector<const Measurement*> ms;
  for (const auto& m : all)
    if (m.group == group && !m.samples_ms.empty()) ms.push_back(&m);
  Composition c;
  c.table.title = title;
  c.table.headers = {"component", "role", "median", "min", "max", "share of parent", "rate"};
  c.table.align = {Align::left, Align::left};
  const Measurement* total = nullptr;
  for (const auto* m : ms)
    if (m->role == Role::total && total == nullptr) total = m;
  auto is_part = [](const Measurement* m) { return m->role == Role::part || m->role == Role::communication; };
  auto parent_of = [&](const Measurement* m) -> const Measurement* {
    if (!is_part(m)) return nullptr;
    if (m->parent.empty()) return total;
    for (const auto* p : ms)
      if (p->name == m->parent) return p;
    return total;
  };
  auto row = [&](const Measurement* m, int depth, double parent_ms) {
    const auto s = stats::summarize(m->samples_ms);
    const double inst = std::max(1, m->instances);
    const double med = s.median / inst;
    std::string share = "—";
    if (is_part(m) && parent_ms > 0) share = fmt_share(med / parent_ms);
    std::string name = std::string(static_cast<std::size_t>(2 * depth), ' ') + (depth > 0 ? "└ " : "") + m->name;
    if (m->instances > 1) name += fmt::format(" (per instance, x{})", m->instances);
    c.table.add_row({name, to_string(m->role), fmt_time(med), fmt_time(s.min / inst), fmt_time(s.max / inst), share,
                     rate_text(*m)});
  };
  // Depth-first from the total: each parent, its parts, then its "other / unaccounted".
  std::function<void(const Measurement*, int)> walk = [&](const Measurement* p, int depth) {
    const double pm = median_ms(*p);
    std::vector<const Measurement*> kids;
    for (const auto* m : ms)
      if (m != p && parent_of(m) == p) kids.push_back(m);
    double sum = 0;
    for (const auto* k : kids) {
      row(k, depth + 1, pm);
      const double km = median_ms(*k);
      sum += km;
      if (km > pm)
        c.warnings.push_back(fmt::format(
            "{} ({}) exceeds its parent {} ({}): parts are timed on their own, so this is noise or work that "
            "overlaps inside the parent",
            k->name, fmt_time(km), p->name, fmt_time(pm)));
      walk(k, depth + 1);
    }
    if (kids.empty()) return;
    const double other = pm - sum;
    c.table.add_row({std::string(static_cast<std::size_t>(2 * (depth + 1)), ' ') + "└ other / unaccounted", "",
                     fmt_quantity_signed(other, Unit::ms), "", "", pm > 0 ? fmt_share_signed(other / pm) : "—", ""});
    if (other < 0)
      c.warnings.push_back(fmt::format(
          "the parts of {} sum to {} = {} of it: parts timed alone overlap inside it (or noise), so the remainder "
          "is negative",
          p->name, fmt_time(sum), fmt_share(pm > 0 ? sum / pm : 0)));
  };
  if (total != nullptr) {
    row(total, 0, 0);
    walk(total, 0);
  }
  // Parts whose parent is not in the group, then everything that is not part of the composition.
  for (const auto* m : ms)
    if (m != total && is_part(m) && parent_of(m) == nullptr) row(m, 0, 0);
  for (const auto* m : ms)
    if (m != total && !is_part(m)) row(m, 0, 0);
  return c;
}

}  // namespace layerbench::reports
