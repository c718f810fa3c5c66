#pragma once
// Effects, margins and thresholds given on the command line: "3%" (a fraction of the base mean) or a
// bare number in the metric's unit.
#include <string>

namespace layerbench::ab {

struct Amount {
  double value = 0;       // a fraction (0.03 for "3%") when relative, else in the metric's unit
  bool relative = false;  // given with a '%'
};

// Parses "3%", "0.5 %", "-2%" or "0.004"; throws InputError naming `flag` on anything else.
Amount parse_amount(const std::string& text, const std::string& flag);

}  // namespace layerbench::ab
