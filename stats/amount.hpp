#pragma once
// Effects, margins and thresholds as users type them: "3%" (a fraction of a reference, here 0.03)
// or a bare number in the metric's unit.
#include <optional>
#include <string_view>

namespace layerbench::stats {

struct Amount {
  double value = 0;       // a fraction (0.03 for "3%") when relative, else in the metric's unit
  bool relative = false;  // written with a '%'
};

// Parses "3%", "0.5 %", "-2%", "+1.5" or "0.004"; nothing for anything else (empty, "3 ms", "1e999").
std::optional<Amount> parse_amount(std::string_view text);

}  // namespace layerbench::stats
