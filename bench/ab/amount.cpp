#include "bench/ab/amount.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

#include "bench/ab/errors.hpp"

namespace layerbench::ab {

Amount parse_amount(const std::string& text, const std::string& flag) {
  if (const auto a = stats::parse_amount(text)) return *a;
  // Say why a number-looking value was refused.
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() && *end == '\0') {
    if (std::isnan(v)) throw InputError(fmt::format("{} {}: must be a finite number", flag, text));
    if (errno == ERANGE || std::isinf(v)) throw InputError(fmt::format("{} {}: out of range", flag, text));
  }
  throw InputError(fmt::format("{} {}: expected a number or a percentage such as 3%", flag, text));
}

}  // namespace layerbench::ab
