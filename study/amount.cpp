#include "study/amount.hpp"

#include <fmt/format.h>

#include "study/errors.hpp"

namespace layerbench::ab {

Amount parse_amount(const std::string& text, const std::string& flag) {
  if (const auto a = stats::parse_amount(text)) return *a;
  throw InputError(fmt::format("{} {}: expected a number or a percentage such as 3%", flag, text));
}

}  // namespace layerbench::ab
