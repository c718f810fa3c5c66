#include "stats/amount.hpp"

#include <charconv>
#include <cmath>

namespace layerbench::stats {

std::optional<Amount> parse_amount(std::string_view s) {
  auto trim = [](std::string_view& v) {
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  };
  trim(s);
  Amount a;
  if (!s.empty() && s.back() == '%') {
    a.relative = true;
    s.remove_suffix(1);
    trim(s);
  }
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  a.value = a.relative ? v / 100 : v;
  return a;
}

}  // namespace layerbench::stats
