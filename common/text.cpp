#include "common/text.hpp"

namespace layerbench::text {

std::string_view strip_bom(std::string_view s) {
  if (s.substr(0, kUtf8Bom.size()) == kUtf8Bom) s.remove_prefix(kUtf8Bom.size());
  return s;
}

void strip_bom_in_place(std::string& s) {
  if (std::string_view(s).substr(0, kUtf8Bom.size()) == kUtf8Bom) s.erase(0, kUtf8Bom.size());
}

}  // namespace layerbench::text
