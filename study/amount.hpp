#pragma once
// Effects, margins and thresholds on the command line (stats::parse_amount), as a usage error.
#include <string>

#include "stats/amount.hpp"

namespace layerbench::ab {

using stats::Amount;

// Parses "3%" or a bare number; throws InputError naming `flag` on anything else.
Amount parse_amount(const std::string& text, const std::string& flag);

}  // namespace layerbench::ab
