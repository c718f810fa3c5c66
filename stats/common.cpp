#include "stats/common.hpp"

#include <stdexcept>
#include <string>

namespace layerbench::stats {

std::string_view to_string(Alternative alternative) {
  switch (alternative) {
    case Alternative::two_sided: return "two-sided";
    case Alternative::less: return "less";
    case Alternative::greater: return "greater";
  }
  return "two-sided";
}

Alternative parse_alternative(std::string_view text) {
  if (text == "two-sided" || text == "two_sided") return Alternative::two_sided;
  if (text == "less") return Alternative::less;
  if (text == "greater") return Alternative::greater;
  throw std::invalid_argument("unknown alternative '" + std::string(text) +
                              "' (expected two-sided, less or greater)");
}

}  // namespace layerbench::stats
