#pragma once
// Text input helpers shared by every reader of user files.
#include <string>
#include <string_view>

namespace layerbench::text {

// A UTF-8 byte order mark (EF BB BF), which spreadsheet exports put in front of CSV files.
inline constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// Removes a leading UTF-8 byte order mark, if any (readers accept one as they accept CRLF).
std::string_view strip_bom(std::string_view s);
void strip_bom_in_place(std::string& s);

}  // namespace layerbench::text
