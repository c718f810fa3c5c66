#pragma once
// Compositions from declared roles: one table per group with the total, its parts nested under
// their parents (indented), each part's share of its own parent, the rates derived from the
// declared work, an explicit "other / unaccounted" row under every parent with parts, and a
// warning wherever the parts exceed their parent (a part timed alone is not additive: noise, or
// overlap inside the parent). References, stacks and probes follow, without shares.
// Used by every binary's console / markdown and by layerbench-report; it reads roles, never names.
#include "reports/result.hpp"
#include "reports/svg.hpp"
#include "reports/table.hpp"

#include <functional>
#include <string>
#include <vector>

namespace layerbench::reports {

struct Composition {
  Table table;
  std::vector<std::string> warnings;
};

// Binary-specific columns appended to every row (what-if fractions, telemetry, a rate against a
// reference): one cell per header for each measurement; the "other / unaccounted" rows get blanks.
struct ExtraColumns {
  std::vector<std::string> headers;
  std::function<std::vector<std::string>(const Measurement&)> cells;
};

// The measurements of one group (all of `results` whose group equals `group`).
Composition composition(const std::vector<Measurement>& results, const std::string& group, const std::string& title,
                        const ExtraColumns& extra = {});

// One stacked bar per parent that has parts (the total first): each part's median and the
// non-negative remainder ("other / unaccounted"), in the unit of time chosen for the total.
svg::BarChart composition_chart(const std::vector<Measurement>& results, const std::string& group,
                                const std::string& title);

// The groups of `results` in first-appearance order.
std::vector<std::string> groups_of(const std::vector<Measurement>& results);

// One line per derived rate of m: "370 TFLOP/s", "110 GB/s alg / 54.9 GB/s bus" (empty when no
// work is declared); rates_text formats rates already derived (NaN: not declared).
std::string rate_text(const Measurement& m);
std::string rates_text(const Rates& r);

}  // namespace layerbench::reports
