#pragma once
// Text input helpers shared by every reader of user files.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace layerbench::text {

// A UTF-8 byte order mark (EF BB BF), which spreadsheet exports put in front of CSV files.
inline constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// Removes a leading UTF-8 byte order mark, if any (readers accept one as they accept CRLF).
std::string_view strip_bom(std::string_view s);
void strip_bom_in_place(std::string& s);

// A whole file's bytes through the input layer (common/input_file.hpp); nullopt when it does
// not exist or cannot be read (the caller names the file in its own error). A directory, a FIFO,
// a device or a file over `max_bytes` throws the input layer's UsageError naming the path.
// The bytes are returned as read, byte order mark included.
std::optional<std::string> read_file(const std::string& path, std::uint64_t max_bytes = std::uint64_t{4} << 30);

// One RFC 4180 CSV cell: a cell with a comma, quote or line break is quoted, quotes doubled. The
// one CSV cell writer (reports' tables, layerbench-ab's --csv).
std::string csv_cell(std::string_view s);

// Columns a string takes on a terminal: one per code point ("±", "—", "×", "µ" are one column),
// none for combining marks, two for East Asian wide and full-width characters and emoji. A byte
// that is not valid UTF-8 counts as one column. Console tables align their cells by it.
std::size_t display_width(std::string_view s);

}  // namespace layerbench::text
