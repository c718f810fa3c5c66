#pragma once
// Compositions from declared roles: one table per group with the total, its parts nested under
// their parents (indented), each part's share of its own parent, the rates derived from the
// declared work, an explicit "other / unaccounted" row under every parent with parts, and a
// warning wherever the parts exceed their parent (a part timed alone is not additive: noise, or
// overlap inside the parent). References, stacks and probes follow, without shares.
// Used by every binary's console / markdown and by layerbench-report; it reads roles, never names.
#include "reports/result.hpp"
#include "reports/table.hpp"

#include <string>
#include <vector>

namespace layerbench::reports {

struct Composition {
  Table table;
  std::vector<std::string> warnings;
};

// The measurements of one group (all of `results` whose group equals `group`).
Composition composition(const std::vector<Measurement>& results, const std::string& group, const std::string& title);

// One line per derived rate of m: "2.87 ms, 370 TFLOP/s" (empty rate when no work is declared).
std::string rate_text(const Measurement& m);

}  // namespace layerbench::reports
