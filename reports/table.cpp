#include "reports/table.hpp"

#include "reports/result.hpp"

#include "common/number_text.hpp"
#include "common/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace layerbench::reports {
namespace {

Align align_of(const Table& t, std::size_t col) {
  return col < t.align.size() ? t.align[col] : Align::right;
}

// Leading spaces indent a nested row ("  └ part"); markdown and HTML collapse them, so they go as
// non-breaking spaces and the nesting survives.
std::string keep_indent(const std::string& escaped) {
  std::size_t n = 0;
  while (n < escaped.size() && escaped[n] == ' ') ++n;
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += "&nbsp;";
  return out + escaped.substr(n);
}

std::string md_cell(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

}  // namespace

std::string to_text(const Table& t) {
  const std::size_t cols = t.headers.size();
  std::vector<std::size_t> width(cols);
  auto cell = [&](const std::vector<std::string>& row, std::size_t c) -> const std::string& {
    static const std::string empty;
    return c < row.size() ? row[c] : empty;
  };
  for (std::size_t c = 0; c < cols; ++c) {
    width[c] = text::display_width(t.headers[c]);
    for (const auto& row : t.rows) width[c] = std::max(width[c], text::display_width(cell(row, c)));
  }
  auto line = [&](const std::vector<std::string>& row) {
    std::string out = " ";
    for (std::size_t c = 0; c < cols; ++c) {
      const std::string& v = cell(row, c);
      const std::string pad(width[c] - text::display_width(v), ' ');
      out += " " + (align_of(t, c) == Align::left ? v + pad : pad + v) + (c + 1 < cols ? " " : "");
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = t.title.empty() ? "" : t.title + "\n";
  out += line(t.headers);
  for (const auto& row : t.rows) out += line(row);
  return out;
}

std::string to_markdown(const Table& t) {
  std::string out;
  if (!t.title.empty()) out += fmt::format("**{}**\n\n", t.title);
  out += "|";
  for (const auto& h : t.headers) out += " " + md_cell(h) + " |";
  out += "\n|";
  for (std::size_t c = 0; c < t.headers.size(); ++c)
    out += align_of(t, c) == Align::left ? "---|" : "---:|";
  out += "\n";
  for (const auto& row : t.rows) {
    out += "|";
    for (std::size_t c = 0; c < t.headers.size(); ++c)
      out += " " + keep_indent(md_cell(c < row.size() ? row[c] : std::string{})) + " |";
    out += "\n";
  }
  return out;
}

std::string to_csv(const Table& t) {
  std::string out;
  for (std::size_t c = 0; c < t.headers.size(); ++c) {
    if (c) out += ',';
    out += text::csv_cell(t.headers[c]);
  }
  out += "\n";
  for (const auto& row : t.rows) {
    for (std::size_t c = 0; c < t.headers.size(); ++c) {
      if (c) out += ',';
      out += text::csv_cell(c < row.size() ? row[c] : std::string{});
    }
    out += "\n";
  }
  return out;
}

std::string to_html(const Table& t) {
  std::string out = "<table>\n";
  if (!t.title.empty()) out += "<caption>" + html_escape(t.title) + "</caption>\n";
  out += "<thead><tr>";
  for (const auto& h : t.headers) out += "<th>" + html_escape(h) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (std::size_t c = 0; c < t.headers.size(); ++c) {
      const char* cls = align_of(t, c) == Align::left ? "l" : "r";
      out += fmt::format("<td class=\"{}\">{}</td>", cls,
                         keep_indent(html_escape(c < row.size() ? row[c] : std::string{})));
    }
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string slug(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c)) out += static_cast<char>(std::tolower(c));
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "table" : out;
}

std::string fmt_fixed(double v, int decimals) { return text::fixed(v, decimals); }

std::string fmt_signed(double v, int decimals, const std::string& suffix) {
  return text::signed_fixed(v, decimals, suffix);
}

std::string fmt_percent(double fraction, int decimals) {
  return std::isfinite(fraction) ? text::fixed(100.0 * fraction, decimals) + "%" : text::kNotAvailable;
}

std::string fmt_p(double p) {
  if (!std::isfinite(p)) return text::kNotAvailable;
  if (p != 0 && p < 1e-4) return fmt::format("{:.2e}", p);
  return fmt::format("{:.4g}", p);
}

std::string fmt_bytes(double bytes) {
  static constexpr const char* kSuffix[] = {"", "K", "M", "G", "T"};
  int k = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && k < 4) {
    v /= 1024.0;
    ++k;
  }
  if (v == std::floor(v)) return fmt::format("{}{}", static_cast<long long>(v), kSuffix[k]);
  return fmt::format("{:.3g}{}", v, kSuffix[k]);
}

}  // namespace layerbench::reports
