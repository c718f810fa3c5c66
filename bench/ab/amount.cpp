#include "bench/ab/amount.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "bench/ab/errors.hpp"

namespace layerbench::ab {

Amount parse_amount(const std::string& text, const std::string& flag) {
  std::string s = text;
  while (!s.empty() && s.back() == ' ') s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  Amount a;
  if (!s.empty() && s.back() == '%') {
    a.relative = true;
    s.pop_back();
    while (!s.empty() && s.back() == ' ') s.pop_back();
  }
  const char* first = s.data();
  const char* last = s.data() + s.size();
  if (first != last && *first == '+') ++first;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(first, last, v);
  if (s.empty() || ec != std::errc() || ptr != last || !std::isfinite(v)) {
    throw InputError(fmt::format("{} {}: expected a number or a percentage such as 3%", flag, text));
  }
  a.value = a.relative ? v / 100 : v;
  return a;
}

}  // namespace layerbench::ab
