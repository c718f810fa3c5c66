#include "common/text.hpp"

#include <fstream>

namespace layerbench::text {

std::string_view strip_bom(std::string_view s) {
  if (s.substr(0, kUtf8Bom.size()) == kUtf8Bom) s.remove_prefix(kUtf8Bom.size());
  return s;
}

void strip_bom_in_place(std::string& s) {
  if (std::string_view(s).substr(0, kUtf8Bom.size()) == kUtf8Bom) s.erase(0, kUtf8Bom.size());
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;
  const auto size = in.tellg();
  std::string out;
  if (size > 0) out.resize(static_cast<std::size_t>(size));
  in.seekg(0);
  if (!out.empty() && !in.read(out.data(), static_cast<std::streamsize>(out.size()))) return std::nullopt;
  // A file that grew while it was read (or reports no size, as a pipe): read on to its end.
  char block[1 << 16];
  while (in.read(block, sizeof block) || in.gcount() > 0) out.append(block, static_cast<std::size_t>(in.gcount()));
  if (in.bad()) return std::nullopt;
  return out;
}

std::string csv_cell(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

}  // namespace layerbench::text
