#include "common/text.hpp"

#include "common/input_file.hpp"

#include <unistd.h>

namespace layerbench::text {

std::string_view strip_bom(std::string_view s) {
  if (s.substr(0, kUtf8Bom.size()) == kUtf8Bom) s.remove_prefix(kUtf8Bom.size());
  return s;
}

void strip_bom_in_place(std::string& s) {
  if (std::string_view(s).substr(0, kUtf8Bom.size()) == kUtf8Bom) s.erase(0, kUtf8Bom.size());
}

std::optional<std::string> read_file(const std::string& path, std::uint64_t max_bytes) {
  // A missing or unreadable file is nullopt (the caller names it); a directory, a FIFO, a device
  // or a file over the limit is the input layer's UsageError naming the path.
  const auto kind = input::kind_of(path);
  if (kind == input::Kind::missing || (kind == input::Kind::regular && ::access(path.c_str(), R_OK) != 0))
    return std::nullopt;
  std::string text = input::read_text(input::Origin{"", path}, max_bytes);
  return text;
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

namespace {

// One code point from s at i (advancing i); an invalid or truncated sequence is one byte.
char32_t next_code_point(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  const int len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
  if (len <= 1 || i + static_cast<std::size_t>(len) > s.size()) {
    ++i;
    return b0;
  }
  char32_t cp = b0 & (0x7F >> len);
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
    if ((b >> 6) != 0x2) {  // not a continuation byte: the lead byte alone
      ++i;
      return b0;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  i += static_cast<std::size_t>(len);
  return cp;
}

bool combining(char32_t c) {
  return (c >= 0x0300 && c <= 0x036F) || (c >= 0x1AB0 && c <= 0x1AFF) || (c >= 0x1DC0 && c <= 0x1DFF) ||
         (c >= 0x20D0 && c <= 0x20FF) || (c >= 0xFE20 && c <= 0xFE2F) || c == 0x200B || c == 0x200D;
}

bool wide(char32_t c) {
  return (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF && c != 0x303F) ||
         (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
         (c >= 0xFF00 && c <= 0xFF60) || (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F6FF) ||
         (c >= 0x1F900 && c <= 0x1F9FF) || (c >= 0x20000 && c <= 0x3FFFD);
}

}  // namespace

std::size_t display_width(std::string_view s) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < s.size();) {
    const char32_t c = next_code_point(s, i);
    width += combining(c) ? 0 : wide(c) ? 2 : 1;
  }
  return width;
}

}  // namespace layerbench::text
