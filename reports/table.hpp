#pragma once
// One table model rendered four ways (console text, markdown for PR comments, CSV for spreadsheets,
// HTML for the page), so the numbers in every output come from the same cells.
#include <string>
#include <vector>

namespace layerbench::reports {

enum class Align { left, right };

struct Table {
  std::string title;                       // used as the CSV file stem and the HTML caption
  std::vector<std::string> headers;
  std::vector<Align> align;                // one per column; missing entries default to right
  std::vector<std::vector<std::string>> rows;

  void add_row(std::vector<std::string> row) { rows.push_back(std::move(row)); }
};

// Console text: the title on its own line, then the header and the rows indented by two spaces,
// columns two spaces apart, each as wide as its widest cell by display width (common/text.hpp:
// "±", "—", "×" take one column), aligned as the table says; no trailing spaces.
std::string to_text(const Table& t);
// GitHub-flavoured markdown; '|' in cells is escaped so a cell never splits a row.
std::string to_markdown(const Table& t);
// RFC 4180 CSV: cells with a comma, quote or newline are quoted, quotes doubled.
std::string to_csv(const Table& t);
// An HTML <table> with a <caption>; text is escaped.
std::string to_html(const Table& t);

std::string html_escape(const std::string& s);
// File-name-safe stem: lower case, runs of non-alphanumerics become one '-'.
std::string slug(const std::string& s);

// Number formatting shared by all tables: fixed decimals, or "—" for NaN.
std::string fmt_fixed(double v, int decimals);
// Signed with an explicit '+', e.g. "+0.347%".
std::string fmt_signed(double v, int decimals, const std::string& suffix = "");
// Percent of a fraction, e.g. 0.709 -> "70.9%".
std::string fmt_percent(double fraction, int decimals = 1);
// p-values: 4 significant digits, scientific below 1e-4.
std::string fmt_p(double p);
// Byte counts with binary suffixes as nccl-tests sizes are given: 1024 -> "1K", 1048576 -> "1M".
std::string fmt_bytes(double bytes);

}  // namespace layerbench::reports
